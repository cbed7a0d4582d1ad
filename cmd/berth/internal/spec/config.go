package spec

import (
	"fmt"
	"os"
	"reflect"
	"strings"
)

// DecodeConfigFile reads the config file at path and decodes it into v;
// see DecodeConfig.
func DecodeConfigFile(path string, v any) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read config file: %w; check the file's path", err)
	}
	return DecodeConfig(path, src, v)
}

// DecodeConfig decodes a config file, such as the agent's, into v: a
// pointer to a struct whose fields carry gohcl's tags.
//
//	Name    string          `hcl:"name,optional"` // an argument
//	Socket  string          `hcl:"socket"`        // a required argument
//	Ports   *PortsConfig    `hcl:"ports,block"`   // a block, at most once
//	Plugins []*PluginConfig `hcl:"plugin,block"`  // a block, any number of times
//	ID      string          `hcl:"id,label"`      // the one label of a block
//
// Arguments are strings, bools, whole numbers or lists of strings; blocks
// are structs, pointers to structs or slices of either. What the file
// leaves out keeps the value v holds, so v may carry the defaults: a block
// fills the struct already there (a nil pointer gets a new one), and each
// block of a slice is appended. Untagged fields are left alone.
//
// The file is HCL, or JSON by a .json name or a leading '{' (HCL's JSON
// form: a labelled block is an object keyed by its label). It is read and
// checked as the specs are: the error, if any, is one *Error or several
// joined, each naming the file, the line and the field, and the field
// meant when a name is misspelt. Any other error means v's type is not one
// DecodeConfig can fill.
func DecodeConfig(filename string, src []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("spec: DecodeConfig needs a pointer to a struct, not %T", v)
	}
	sh, err := shapeOf(rv.Elem().Type())
	if err != nil {
		return err
	}
	p := &parser{file: filename, noun: "config"}
	root, _ := p.read(src)
	if root == nil || len(p.errs) > 0 {
		return joinErrors(p.errs)
	}
	p.decodeBody(root, rv.Elem(), sh, scope{})
	return joinErrors(p.errs)
}

// shape is what a struct's tags say its body holds.
type shape struct {
	names  []string // the fields' names in the struct's order, for suggestions
	fields map[string]*shapeField
	label  int // index of the label's struct field; -1 for none
}

// shapeField is one argument or block of a shape.
type shapeField struct {
	index    int
	required bool
	block    *shape // nil for an argument
}

// shapeOf reads the tags of struct type t.
func shapeOf(t reflect.Type) (*shape, error) {
	sh := &shape{fields: map[string]*shapeField{}, label: -1}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("hcl")
		if !ok {
			continue
		}
		name, kind, _ := strings.Cut(tag, ",")
		f := &shapeField{index: i}
		switch kind {
		case "", "optional":
			if !isArgType(sf.Type) {
				return nil, fmt.Errorf("spec: %s.%s: cannot decode argument %q into %s", t.Name(), sf.Name, name, sf.Type)
			}
			f.required = kind == ""
		case "block":
			bt := blockStruct(sf.Type)
			if bt == nil {
				return nil, fmt.Errorf("spec: %s.%s: block %q must be a struct, a pointer to one or a slice of either, not %s", t.Name(), sf.Name, name, sf.Type)
			}
			b, err := shapeOf(bt)
			if err != nil {
				return nil, err
			}
			f.block = b
		case "label":
			if sh.label >= 0 || sf.Type.Kind() != reflect.String {
				return nil, fmt.Errorf("spec: %s.%s: a block takes one label, a string", t.Name(), sf.Name)
			}
			sh.label = i
			continue
		default:
			return nil, fmt.Errorf("spec: %s.%s: unsupported tag %q", t.Name(), sf.Name, tag)
		}
		sh.names = append(sh.names, name)
		sh.fields[name] = f
	}
	return sh, nil
}

func isArgType(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int32, reflect.Int64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	}
	return false
}

// blockStruct is the struct type a block field holds, or nil.
func blockStruct(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

// decodeBody decodes the fields of body b into the struct v.
func (p *parser) decodeBody(b *node, v reflect.Value, sh *shape, s scope) {
	fs := newFields()
	for _, f := range b.fields {
		if f.val.kind == kindNull {
			continue
		}
		sf := sh.fields[f.name]
		if sf == nil {
			fs.unknown(p, f, s, sh.names)
			continue
		}
		fv := v.Field(sf.index)
		repeats := sf.block != nil && fv.Kind() == reflect.Slice
		if repeats {
			fs.seen[f.name] = f.line
		} else if !p.once(fs.seen, f, s) {
			continue
		}
		if sf.block != nil {
			p.decodeBlocks(f, fv, sf.block, s)
			continue
		}
		p.decodeArg(f, fv, s)
	}
	for _, name := range sh.names {
		if sh.fields[name].required && !fs.has(name) {
			p.missing(b.line, s, name, "")
		}
	}
}

// decodeArg decodes argument f into fv, which isArgType allows.
func (p *parser) decodeArg(f *field, fv reflect.Value, s scope) {
	switch fv.Kind() {
	case reflect.String:
		if x, ok := p.str(f, s); ok {
			fv.SetString(x)
		}
	case reflect.Bool:
		if x, ok := p.boolean(f, s); ok {
			fv.SetBool(x)
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		if x, ok := p.integer(f, s); ok {
			fv.SetInt(int64(x))
		}
	case reflect.Slice:
		if list := p.strList(f, s); list != nil {
			fv.Set(reflect.ValueOf(list).Convert(fv.Type()))
		}
	}
}

// decodeBlocks decodes one occurrence of block f (in JSON, possibly
// several blocks) into fv: a struct, a pointer to one or a slice.
func (p *parser) decodeBlocks(f *field, fv reflect.Value, sh *shape, s scope) {
	for _, lb := range p.configBlocks(f, sh, s, fv.Kind() == reflect.Slice) {
		var elem reflect.Value
		switch fv.Kind() {
		case reflect.Slice:
			if et := fv.Type().Elem(); et.Kind() == reflect.Pointer {
				ptr := reflect.New(et.Elem())
				fv.Set(reflect.Append(fv, ptr))
				elem = ptr.Elem()
			} else {
				fv.Set(reflect.Append(fv, reflect.Zero(et)))
				elem = fv.Index(fv.Len() - 1)
			}
		case reflect.Pointer:
			if fv.IsNil() {
				fv.Set(reflect.New(fv.Type().Elem()))
			}
			elem = fv.Elem()
		default:
			elem = fv
		}
		if sh.label >= 0 {
			elem.Field(sh.label).SetString(lb.label)
		}
		p.decodeBody(lb.body, elem, sh, lb.scope)
	}
}

// labelledBlock is one block's body, with its label when it takes one.
type labelledBlock struct {
	label string
	body  *node
	scope scope
}

// configBlocks reads the blocks field f holds: one, or, in JSON, a list
// when the block repeats, and an object keyed by label (or a list of
// them) for a labelled block.
func (p *parser) configBlocks(f *field, sh *shape, s scope, repeats bool) []labelledBlock {
	var out []labelledBlock
	if sh.label < 0 {
		var bodies []*node
		if repeats {
			bodies = p.blocks(f, s)
		} else if b := p.block(f, s); b != nil {
			bodies = []*node{b}
		}
		for _, b := range bodies {
			out = append(out, labelledBlock{body: b, scope: s.sub(f.name)})
		}
		return out
	}
	if f.val.block {
		if label, ok := p.label(f, s); ok {
			out = append(out, labelledBlock{label: label, body: f.val, scope: s.labelled(f.name, label)})
		}
		return out
	}
	byLabel := []*node{f.val}
	if f.val.kind == kindList {
		byLabel = f.val.items
	}
	for _, obj := range byLabel {
		if obj.kind != kindObject {
			p.bad(obj.line, s, f.name, `must be an object of blocks by name ({"name": {...}}), not %s`, obj.describe())
			continue
		}
		for _, lf := range obj.fields {
			one := &field{name: f.name, line: lf.line, val: lf.val}
			for _, b := range p.blocks(one, s) {
				out = append(out, labelledBlock{label: lf.name, body: b, scope: s.labelled(f.name, lf.name)})
			}
		}
	}
	return out
}
