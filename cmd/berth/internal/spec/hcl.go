package spec

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// readHCL parses HCL native syntax into the tree.
func (p *parser) readHCL(src []byte) *node {
	f, diags := p.parseHCL(src)
	if diags.HasErrors() {
		p.diags(diags, "")
		return nil
	}
	return p.hclBody(f.Body.(*hclsyntax.Body), "")
}

// oneLineFixes are the HCL errors that only say "this needs its own line".
// INTERFACE.md writes blocks on one line (mount_options { fs_type = "ext4"
// mount_flags = ["noatime"] }, topology_request { required { ... } }),
// which HCL's native syntax refuses; parseHCL accepts them.
var oneLineFixes = map[string]bool{
	"Invalid single-argument block definition": true,
	"Argument definition required":             true,
	"Missing newline after block definition":   true,
	"Missing newline after argument":           true,
}

// parseHCL parses src. When HCL's first complaint is only about one-line
// blocks, it puts each field and nested block of every block on its own
// line and parses again, keeping the errors on the lines of the file as
// written.
func (p *parser) parseHCL(src []byte) (*hcl.File, hcl.Diagnostics) {
	pos := hcl.Pos{Line: 1, Column: 1, Byte: 0}
	f, diags := hclsyntax.ParseConfig(src, p.file, pos)
	first := firstError(diags)
	if first == nil || !oneLineFixes[first.Summary] {
		return f, diags
	}
	out, added := splitOneLineBlocks(src)
	if len(added) == 0 {
		return f, diags
	}
	p.lineMap = newLineMap(out, added)
	return hclsyntax.ParseConfig(out, p.file, pos)
}

func firstError(diags hcl.Diagnostics) *hcl.Diagnostic {
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			return d
		}
	}
	return nil
}

// splitOneLineBlocks rewrites src so that inside every block each field
// and nested block sits on its own line: a newline after a block's "{",
// before its "}", after its "}", and in place of a comma between fields.
// Object values (segments = { zone = "a", rack = "b" }) are left alone. It
// returns the new text and the offsets in it of the newlines it added.
func splitOneLineBlocks(src []byte) ([]byte, []int) {
	toks, _ := hclsyntax.LexConfig(src, "", hcl.Pos{Line: 1, Column: 1, Byte: 0})
	endsLine := func(i int) bool {
		if i < 0 || i >= len(toks) {
			return true
		}
		t := toks[i]
		return t.Type == hclsyntax.TokenNewline || t.Type == hclsyntax.TokenEOF ||
			t.Type == hclsyntax.TokenComment && bytes.HasSuffix(t.Bytes, []byte("\n"))
	}
	insertAt := map[int]bool{} // offsets in src before which a newline goes
	commas := map[int]bool{}   // offsets in src of commas that become newlines
	var stack []bool           // open brackets: true for a block's brace
	for i, t := range toks {
		switch t.Type {
		case hclsyntax.TokenOBrace:
			prev := hclsyntax.TokenNil
			if i > 0 {
				prev = toks[i-1].Type
			}
			// A block's brace follows its type or a label; an object's
			// follows "=", "(", "[", "," or ":".
			isBlock := prev == hclsyntax.TokenIdent || prev == hclsyntax.TokenCQuote
			stack = append(stack, isBlock)
			if isBlock && !endsLine(i+1) && toks[i+1].Type != hclsyntax.TokenCBrace {
				insertAt[t.Range.End.Byte] = true
			}
		case hclsyntax.TokenOBrack, hclsyntax.TokenOParen:
			stack = append(stack, false)
		case hclsyntax.TokenCBrack, hclsyntax.TokenCParen:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case hclsyntax.TokenCBrace:
			if len(stack) == 0 {
				continue
			}
			isBlock := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !isBlock {
				continue
			}
			if !endsLine(i-1) && toks[i-1].Type != hclsyntax.TokenOBrace {
				insertAt[t.Range.Start.Byte] = true
			}
			if !endsLine(i+1) && toks[i+1].Type != hclsyntax.TokenCBrace {
				insertAt[t.Range.End.Byte] = true
			}
		case hclsyntax.TokenComma:
			if inBody(stack) {
				commas[t.Range.Start.Byte] = true
			}
		case hclsyntax.TokenIdent:
			// fs_type = "ext4"  mount_flags = [...]: a name that starts a
			// field or block right after a value ends starts a new line.
			if inBody(stack) && i > 0 && i+1 < len(toks) && endsValue[toks[i-1].Type] && startsItem[toks[i+1].Type] {
				insertAt[t.Range.Start.Byte] = true
			}
		}
	}
	if len(insertAt) == 0 && len(commas) == 0 {
		return src, nil
	}
	out := make([]byte, 0, len(src)+len(insertAt))
	var added []int
	for i := 0; i <= len(src); i++ {
		if insertAt[i] {
			added = append(added, len(out))
			out = append(out, '\n')
		}
		if i == len(src) {
			break
		}
		if commas[i] {
			added = append(added, len(out))
			out = append(out, '\n')
			continue
		}
		out = append(out, src[i])
	}
	return out, added
}

// inBody reports whether the innermost open bracket is a block's brace
// (or none: the file's own body).
func inBody(stack []bool) bool { return len(stack) == 0 || stack[len(stack)-1] }

// endsValue are the tokens an expression can end with.
var endsValue = map[hclsyntax.TokenType]bool{
	hclsyntax.TokenCQuote: true, hclsyntax.TokenNumberLit: true, hclsyntax.TokenIdent: true,
	hclsyntax.TokenCBrack: true, hclsyntax.TokenCBrace: true, hclsyntax.TokenCParen: true,
	hclsyntax.TokenCHeredoc: true,
}

// startsItem are the tokens that follow a field's or a block's name.
var startsItem = map[hclsyntax.TokenType]bool{
	hclsyntax.TokenEqual: true, hclsyntax.TokenOBrace: true, hclsyntax.TokenOQuote: true,
}

// newLineMap maps a line of the rewritten source back to the file's own.
func newLineMap(out []byte, added []int) func(int) int {
	// The line each added newline ends, in the rewritten source.
	ends := make([]int, len(added))
	for i, off := range added {
		ends[i] = 1 + bytes.Count(out[:off], []byte{'\n'})
	}
	return func(line int) int {
		n := line
		for _, e := range ends {
			if e < line {
				n--
			}
		}
		return n
	}
}

// hclBody turns attributes and blocks into one object, in source order.
func (p *parser) hclBody(b *hclsyntax.Body, path string) *node {
	n := &node{kind: kindObject, line: b.SrcRange.Start.Line, block: true}
	type ordered struct {
		pos hcl.Pos
		f   *field
	}
	var all []ordered
	for name, a := range b.Attributes {
		v := p.hclExpr(a.Expr, join(path, name))
		if v == nil {
			continue
		}
		all = append(all, ordered{a.NameRange.Start, &field{name: name, line: a.NameRange.Start.Line, val: v}})
	}
	for _, blk := range b.Blocks {
		fp := join(path, blk.Type)
		v := p.hclBody(blk.Body, fp)
		v.line = blk.TypeRange.Start.Line
		v.labels = blk.Labels
		all = append(all, ordered{blk.TypeRange.Start, &field{name: blk.Type, line: blk.TypeRange.Start.Line, val: v}})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].pos.Byte < all[j].pos.Byte })
	for _, o := range all {
		n.fields = append(n.fields, o.f)
	}
	return n
}

// hclExpr reads a literal expression. Object and tuple constructors are
// walked item by item so nested values keep their own lines; anything
// else is evaluated with no variables or functions.
func (p *parser) hclExpr(e hclsyntax.Expression, path string) *node {
	line := e.Range().Start.Line
	switch e := e.(type) {
	case *hclsyntax.ObjectConsExpr:
		n := &node{kind: kindObject, line: line}
		for _, item := range e.Items {
			kv, diags := item.KeyExpr.Value(nil)
			if diags.HasErrors() {
				p.diags(diags, path)
				continue
			}
			key, err := convert.Convert(kv, cty.String)
			if err != nil || key.IsNull() || !key.IsKnown() {
				p.errorf(item.KeyExpr.Range().Start.Line, path, "%s: keys must be strings", path)
				continue
			}
			name := key.AsString()
			v := p.hclExpr(item.ValueExpr, join(path, name))
			if v == nil {
				continue
			}
			n.fields = append(n.fields, &field{name: name, line: item.KeyExpr.Range().Start.Line, val: v})
		}
		return n
	case *hclsyntax.TupleConsExpr:
		n := &node{kind: kindList, line: line}
		for i, item := range e.Exprs {
			v := p.hclExpr(item, fmt.Sprintf("%s[%d]", path, i))
			if v == nil {
				continue
			}
			n.items = append(n.items, v)
		}
		return n
	}
	v, diags := e.Value(nil)
	if ste, ok := e.(*hclsyntax.ScopeTraversalExpr); ok && diags.HasErrors() && len(ste.Traversal) == 1 {
		word := ste.Traversal.RootName()
		p.errorf(line, path, "%s: %s is a bare word; put it in quotes: %q", path, word, word)
		return nil
	}
	if diags.HasErrors() {
		p.errorf(line, path, "%s: must be a literal value (variables and functions are not allowed here): %s",
			path, diagText(diags[0]))
		return nil
	}
	return p.ctyValue(v, line, path)
}

// ctyValue converts an evaluated value into the tree.
func (p *parser) ctyValue(v cty.Value, line int, path string) *node {
	if v.IsNull() {
		return &node{kind: kindNull, line: line}
	}
	if !v.IsWhollyKnown() {
		p.errorf(line, path, "%s: must be a literal value", path)
		return nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return &node{kind: kindString, line: line, str: v.AsString()}
	case t == cty.Number:
		return &node{kind: kindNumber, line: line, str: v.AsBigFloat().Text('f', -1)}
	case t == cty.Bool:
		return &node{kind: kindBool, line: line, b: v.True()}
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		n := &node{kind: kindList, line: line}
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			if c := p.ctyValue(ev, line, path); c != nil {
				n.items = append(n.items, c)
			}
		}
		return n
	case t.IsMapType() || t.IsObjectType():
		n := &node{kind: kindObject, line: line}
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			if c := p.ctyValue(ev, line, join(path, k.AsString())); c != nil {
				n.fields = append(n.fields, &field{name: k.AsString(), line: line, val: c})
			}
		}
		return n
	}
	p.errorf(line, path, "%s: unsupported value of type %s", path, t.FriendlyName())
	return nil
}

// diags records HCL diagnostics as spec errors.
func (p *parser) diags(diags hcl.Diagnostics, path string) {
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		line := 1
		if d.Subject != nil {
			line = d.Subject.Start.Line
		}
		msg := diagText(d)
		if path != "" {
			msg = path + ": " + msg
		}
		p.errorf(line, path, "%s", msg)
	}
}

func diagText(d *hcl.Diagnostic) string {
	s := d.Summary
	if s != "" {
		s = strings.ToLower(s[:1]) + s[1:]
	}
	if d.Detail != "" {
		s += ": " + d.Detail
	}
	return strings.TrimSuffix(s, ".")
}

// join builds a dotted field path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
