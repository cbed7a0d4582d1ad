package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// scope is where in a job spec a field is: how messages name it
// (group "db": volume "data") and its dotted path for Error.Field
// (group[db].volume[data]).
type scope struct {
	human  string
	dotted string
}

// labelled is the scope of a labelled block inside s: group "db".
func (s scope) labelled(kind, label string) scope {
	return scope{
		human:  joinHuman(s.human, fmt.Sprintf("%s %q", kind, label)),
		dotted: join(s.dotted, kind+"["+label+"]"),
	}
}

// sub is the scope of an unlabelled block inside s: config, restart.
func (s scope) sub(kind string) scope {
	return scope{human: joinHuman(s.human, kind), dotted: join(s.dotted, kind)}
}

// field is the dotted path of one of s's fields.
func (s scope) field(name string) string { return join(s.dotted, name) }

// prefix is the start of a message about something in s.
func (s scope) prefix() string {
	if s.human == "" {
		return ""
	}
	return s.human + ": "
}

func joinHuman(a, b string) string {
	if a == "" {
		return b
	}
	return a + ": " + b
}

// bad records a problem with field name of s: the message reads
// `<scope>: <name> <what>`.
func (p *parser) bad(line int, s scope, name, format string, args ...any) {
	p.errorf(line, s.field(name), "%s%s %s", s.prefix(), name, fmt.Sprintf(format, args...))
}

// badIn records a problem with s as a whole: `<scope>: <what>`.
func (p *parser) badIn(line int, s scope, format string, args ...any) {
	p.errorf(line, s.dotted, "%s%s", s.prefix(), fmt.Sprintf(format, args...))
}

// jobOnce records a field of s that may appear once; a repeat is an error.
func (p *parser) jobOnce(seen map[string]int, f *field, s scope) bool {
	if first, dup := seen[f.name]; dup {
		p.bad(f.line, s, f.name, "is set twice (first at line %d)", first)
		return false
	}
	seen[f.name] = f.line
	return true
}

// jobUnknown reports a field s does not have, with the likeliest intended
// name, which it returns ("" for none).
func (p *parser) jobUnknown(f *field, s scope, known []string) string {
	if sg := suggest(f.name, known); sg != "" {
		p.badIn(f.line, s, "unknown field %q; did you mean %q?", f.name, sg)
		return sg
	}
	p.badIn(f.line, s, "unknown field %q; valid fields are %s", f.name, strings.Join(known, ", "))
	return ""
}

// fields tracks the fields of one block: where each was set, and which
// names a misspelt field was taken for (so that a required one is not
// also reported missing).
type fields struct {
	seen    map[string]int
	guessed map[string]bool
}

func newFields() *fields { return &fields{seen: map[string]int{}, guessed: map[string]bool{}} }

// unknown reports f as unknown in s and remembers the name it suggests.
func (fs *fields) unknown(p *parser, f *field, s scope, known []string) {
	if sg := p.jobUnknown(f, s, known); sg != "" {
		fs.guessed[sg] = true
	}
}

// has reports whether name was set, or a misspelling of it was reported.
func (fs *fields) has(name string) bool {
	_, ok := fs.seen[name]
	return ok || fs.guessed[name]
}

// jobStr reads a string.
func (p *parser) jobStr(f *field, s scope) (string, bool) {
	if f.val.kind == kindString {
		return f.val.str, true
	}
	hint := ""
	if f.val.kind == kindNumber || f.val.kind == kindBool {
		hint = "; put it in quotes"
	}
	p.bad(f.line, s, f.name, "must be a string, not %s%s", f.val.describe(), hint)
	return "", false
}

// jobBool reads a bool.
func (p *parser) jobBool(f *field, s scope) bool {
	if f.val.kind == kindBool {
		return f.val.b
	}
	hint := ""
	if f.val.kind == kindString && (f.val.str == "true" || f.val.str == "false") {
		hint = "; leave out the quotes"
	}
	p.bad(f.line, s, f.name, "must be true or false, not %s%s", f.val.describe(), hint)
	return false
}

// jobInt reads a whole number.
func (p *parser) jobInt(f *field, s scope) (int, bool) {
	if f.val.kind != kindNumber {
		hint := ""
		if f.val.kind == kindString {
			if _, err := strconv.Atoi(f.val.str); err == nil {
				hint = "; leave out the quotes"
			}
		}
		p.bad(f.line, s, f.name, "must be a whole number, not %s%s", f.val.describe(), hint)
		return 0, false
	}
	n, err := strconv.ParseInt(f.val.str, 10, 32)
	if err != nil {
		p.bad(f.line, s, f.name, "must be a whole number, not %s", f.val.str)
		return 0, false
	}
	return int(n), true
}

// jobDuration reads a duration written as "30s" or "5m". The API's JSON
// form writes durations in nanoseconds, so a number is taken as such there.
func (p *parser) jobDuration(f *field, s scope) (time.Duration, bool) {
	switch f.val.kind {
	case kindString:
		d, err := time.ParseDuration(strings.TrimSpace(f.val.str))
		if err != nil {
			p.bad(f.line, s, f.name, "%q is not a duration; write one such as \"30s\", \"5m\" or \"1h30m\"", f.val.str)
			return 0, false
		}
		if d < 0 {
			p.bad(f.line, s, f.name, "%q must not be negative", f.val.str)
			return 0, false
		}
		return d, true
	case kindNumber:
		if p.pascal {
			n, err := strconv.ParseFloat(f.val.str, 64)
			if err != nil || n < 0 || n != math.Trunc(n) || n >= 1<<63 {
				p.bad(f.line, s, f.name, "must be a non-negative whole number of nanoseconds, not %s", f.val.str)
				return 0, false
			}
			return time.Duration(n), true
		}
		p.bad(f.line, s, f.name, "must be a duration string such as \"%ss\", not a number; durations need a unit", f.val.str)
		return 0, false
	}
	p.bad(f.line, s, f.name, "must be a duration such as \"30s\", not %s", f.val.describe())
	return 0, false
}

// jobStrList reads a list of strings.
func (p *parser) jobStrList(f *field, s scope) []string {
	if f.val.kind != kindList {
		p.bad(f.line, s, f.name, "must be a list of strings such as [\"a\", \"b\"], not %s", f.val.describe())
		return nil
	}
	out := make([]string, 0, len(f.val.items))
	for i, item := range f.val.items {
		if item.kind != kindString {
			p.bad(item.line, s, fmt.Sprintf("%s[%d]", f.name, i), "must be a string, not %s", item.describe())
			continue
		}
		out = append(out, item.str)
	}
	return out
}

// jobBlock reads a block that appears once and takes no label (config,
// restart, csi_plugin). A one-object list is the JSON form of one block.
func (p *parser) jobBlock(f *field, s scope) *node {
	if len(f.val.labels) > 0 {
		p.bad(f.val.line, s, f.name, "takes no label; write %s { ... } without %q", f.name, f.val.labels[0])
		return nil
	}
	if f.val.kind == kindList && len(f.val.items) == 1 && f.val.items[0].kind == kindObject {
		return f.val.items[0]
	}
	if f.val.kind != kindObject {
		p.bad(f.line, s, f.name, "must be a block (%s { ... }), not %s", f.name, f.val.describe())
		return nil
	}
	return f.val
}

// jobLabel reads the one label of a labelled block (group "db"). ok is
// false, the problem reported, when it has none or several.
func (p *parser) jobLabel(f *field, s scope) (string, bool) {
	if f.val.kind != kindObject {
		p.bad(f.line, s, f.name, "must be a block (%s \"name\" { ... }), not %s", f.name, f.val.describe())
		return "", false
	}
	switch len(f.val.labels) {
	case 0:
		p.bad(f.line, s, f.name, "needs a name; write %s \"name\" { ... }", f.name)
		return "", false
	case 1:
	default:
		p.bad(f.line, s, f.name, "takes one name, not %d; write %s %q { ... }", len(f.val.labels), f.name, f.val.labels[0])
		return "", false
	}
	label := f.val.labels[0]
	if strings.TrimSpace(label) == "" {
		p.bad(f.line, s, f.name, "has an empty name; write %s \"name\" { ... }", f.name)
		return "", false
	}
	return label, true
}

// jobStrMap reads a block of name = "value" pairs (env). Numbers and
// bools are taken as their text.
func (p *parser) jobStrMap(f *field, s scope) map[string]string {
	b := p.jobBlock(f, s)
	if b == nil {
		return nil
	}
	bs := s.sub(f.name)
	out := make(map[string]string, len(b.fields))
	lines := map[string]int{}
	for _, kv := range b.fields {
		if first, dup := lines[kv.name]; dup {
			p.bad(kv.line, bs, kv.name, "is set twice (first at line %d)", first)
			continue
		}
		lines[kv.name] = kv.line
		switch kv.val.kind {
		case kindString, kindNumber:
			out[kv.name] = kv.val.str
		case kindBool:
			out[kv.name] = strconv.FormatBool(kv.val.b)
		case kindNull:
		default:
			p.bad(kv.line, bs, kv.name, "must be a string, not %s", kv.val.describe())
		}
	}
	return out
}

// badValue reports a value that is not one of valid, suggesting the
// closest.
func (p *parser) badValue(f *field, s scope, valid []string) {
	msg := fmt.Sprintf("%q is not valid; one of %s", f.val.str, quoteList(valid))
	if sg := suggest(f.val.str, valid); sg != "" {
		msg += fmt.Sprintf("; did you mean %q?", sg)
	}
	p.bad(f.line, s, f.name, "%s", msg)
}

// oneOf reads a string that must be one of valid.
func (p *parser) oneOf(f *field, s scope, valid []string) (string, bool) {
	v, ok := p.jobStr(f, s)
	if !ok {
		return "", false
	}
	for _, x := range valid {
		if v == x {
			return v, true
		}
	}
	p.badValue(f, s, valid)
	return "", false
}
