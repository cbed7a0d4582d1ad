package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
)

// readJSON parses JSON into the tree, keeping each value's line.
func (p *parser) readJSON(src []byte) *node {
	r := &jsonReader{p: p, src: src, dec: json.NewDecoder(bytes.NewReader(src))}
	r.dec.UseNumber()
	for i, c := range src {
		if c == '\n' {
			r.newlines = append(r.newlines, i)
		}
	}
	n, ok := r.value()
	if !ok {
		return nil
	}
	if _, err := r.dec.Token(); err != io.EOF {
		p.errorf(r.line(), "", "malformed JSON: more data after the %s's object; the file holds one %s", p.noun, p.noun)
		return nil
	}
	return n
}

type jsonReader struct {
	p        *parser
	src      []byte
	dec      *json.Decoder
	newlines []int // byte offsets of '\n'
}

// line is the line of the decoder's position (just after the last token).
func (r *jsonReader) line() int { return r.lineAt(int(r.dec.InputOffset())) }

func (r *jsonReader) lineAt(offset int) int {
	// The token ends at offset; the line holding its last byte.
	return sort.SearchInts(r.newlines, offset) + 1
}

func (r *jsonReader) fail(err error) {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		r.p.errorf(r.lineAt(int(syn.Offset)), "", "malformed JSON: %v", err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		r.p.errorf(len(r.newlines)+1, "", "malformed JSON: the file ends early; is a closing brace or bracket missing?")
	default:
		r.p.errorf(r.line(), "", "malformed JSON: %v", err)
	}
}

func (r *jsonReader) value() (*node, bool) {
	tok, err := r.dec.Token()
	if err != nil {
		r.fail(err)
		return nil, false
	}
	line := r.line()
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: kindObject, line: line}
			for r.dec.More() {
				kt, err := r.dec.Token()
				if err != nil {
					r.fail(err)
					return nil, false
				}
				key, _ := kt.(string)
				kline := r.line()
				v, ok := r.value()
				if !ok {
					return nil, false
				}
				n.fields = append(n.fields, &field{name: key, line: kline, val: v})
			}
			if _, err := r.dec.Token(); err != nil { // '}'
				r.fail(err)
				return nil, false
			}
			return n, true
		case '[':
			n := &node{kind: kindList, line: line}
			for r.dec.More() {
				v, ok := r.value()
				if !ok {
					return nil, false
				}
				n.items = append(n.items, v)
			}
			if _, err := r.dec.Token(); err != nil { // ']'
				r.fail(err)
				return nil, false
			}
			return n, true
		}
	case string:
		return &node{kind: kindString, line: line, str: t}, true
	case json.Number:
		return &node{kind: kindNumber, line: line, str: t.String()}, true
	case bool:
		return &node{kind: kindBool, line: line, b: t}, true
	case nil:
		return &node{kind: kindNull, line: line}, true
	}
	r.p.errorf(line, "", "malformed JSON: unexpected %v", tok)
	return nil, false
}
