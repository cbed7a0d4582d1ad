package spec

import (
	"bytes"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

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
