package spec

import (
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// readHCL parses HCL native syntax, as hashicorp/hcl/v2 reads it, into
// the tree.
func (p *parser) readHCL(src []byte) *node {
	f, diags := hclsyntax.ParseConfig(src, p.file, hcl.Pos{Line: 1, Column: 1, Byte: 0})
	if diags.HasErrors() {
		p.diags(diags, "")
		return nil
	}
	return p.hclBody(f.Body.(*hclsyntax.Body), "")
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
	if hasFor(e) {
		p.errorf(line, path, "%s: must be a literal value (for expressions are not allowed here)", path)
		return nil
	}
	if keepsReferences(path) {
		if text, ok := templateText(e); ok {
			return &node{kind: kindString, line: line, str: text}
		}
	}
	v, diags := e.Value(templateContext(e, path))
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

// hasFor reports whether e holds a for expression. Each level of them
// can multiply a value's size: a 265-byte spec of six took 20 seconds to
// read.
func hasFor(e hclsyntax.Expression) bool {
	found := false
	hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		if _, ok := n.(*hclsyntax.ForExpr); ok {
			found = true
		}
		return nil
	})
	return found
}

// templateContext lets a task's command, args and entrypoint keep ${NAME} as
// written, for the client to replace with the task's environment
// (BERTH_NODE_NAME...): each plain name a template refers to evaluates to
// "${NAME}". Anywhere else, and for anything but a plain name (var.x, a
// function), it stays an error.
func templateContext(e hclsyntax.Expression, path string) *hcl.EvalContext {
	if !strings.HasSuffix(path, ".task.config.command") && !strings.Contains(path, ".task.config.args[") &&
		!strings.Contains(path, ".task.config.entrypoint[") {
		return nil
	}
	switch e.(type) {
	case *hclsyntax.TemplateExpr, *hclsyntax.TemplateWrapExpr:
	default:
		return nil
	}
	vars := map[string]cty.Value{}
	for _, tr := range e.Variables() {
		if len(tr) == 1 {
			vars[tr.RootName()] = cty.StringVal("${" + tr.RootName() + "}")
		}
	}
	if len(vars) == 0 {
		return nil
	}
	return &hcl.EvalContext{Variables: vars}
}

// keepsReferences reports a field whose ${...} name a node's attributes
// for the scheduler (constraint, affinity and spread attributes and
// values): kept as written.
func keepsReferences(path string) bool {
	for _, b := range []string{".constraint.", ".affinity.", ".spread."} {
		if strings.HasSuffix(path, b+"attribute") || strings.HasSuffix(path, b+"value") {
			return true
		}
	}
	return false
}

// templateText writes a template of literals and ${a.b.c} references
// back as its text; ok is false for anything else in it (a function, an
// index, a conditional), which stays an error.
func templateText(e hclsyntax.Expression) (string, bool) {
	var parts []hclsyntax.Expression
	switch t := e.(type) {
	case *hclsyntax.TemplateWrapExpr:
		parts = []hclsyntax.Expression{t.Wrapped}
	case *hclsyntax.TemplateExpr:
		parts = t.Parts
	default:
		return "", false
	}
	var b strings.Builder
	for _, part := range parts {
		switch x := part.(type) {
		case *hclsyntax.LiteralValueExpr:
			if x.Val.Type() != cty.String {
				return "", false
			}
			b.WriteString(x.Val.AsString())
		case *hclsyntax.ScopeTraversalExpr:
			names := []string{x.Traversal.RootName()}
			for _, step := range x.Traversal[1:] {
				attr, ok := step.(hcl.TraverseAttr)
				if !ok {
					return "", false
				}
				names = append(names, attr.Name)
			}
			b.WriteString("${" + strings.Join(names, ".") + "}")
		default:
			return "", false
		}
	}
	return b.String(), true
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
		text, ok := numberText(v.AsBigFloat())
		if !ok {
			p.errorf(line, path, "%s: the number is too large or too small; no field takes one beyond 1e308 or below 1e-308", path)
			return nil
		}
		return &node{kind: kindNumber, line: line, str: text}
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

// numberText is f written out in decimal, or false when f is beyond
// float64's range, as no field's value is: HCL reads 1e-1000000 exactly,
// and writing it out would take minutes.
func numberText(f *big.Float) (string, bool) {
	if f.IsInf() {
		return "", false
	}
	if exp := f.MantExp(nil); f.Sign() != 0 && (exp > 1024 || exp < -1021) {
		return "", false
	}
	return f.Text('f', -1), true
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
		if hint := diagHints[d.Summary]; hint != "" && !strings.Contains(d.Detail, "per line") {
			msg += "; " + hint
		}
		if path != "" {
			msg = path + ": " + msg
		}
		p.errorf(line, path, "%s", msg)
	}
}

// diagHints say what to do about the HCL errors people meet most, when
// HCL's own words do not. A block written on one line holds at most one
// argument in HCL, and no nested block:
//
//	mount_options { fs_type = "ext4"  mount_flags = ["noatime"] }
//
// is refused, where the same on three lines is not.
var diagHints = map[string]string{
	"Invalid single-argument block definition": "put each argument on its own line",
	"Missing newline after argument":           "put each argument on its own line",
	"Missing newline after block definition":   "put each block on its own line",
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
