package spec

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/berth-csi/berth/structs"
)

// The helpers every decoder of the package reads the tree with: the volume
// spec's (volume.go) and the job spec's (job*.go). Each reads one field,
// reports what is wrong with it at its line in the words of its scope, and
// returns what it could read.

// scope is where a field is: how messages name it (group "db": volume
// "data") and its dotted path for Error.Field (group[db].volume[data]).
// The zero scope is the file's top level.
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

// join builds a dotted field path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
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

// missing records a required field of s that is not set, at line (the
// block's): `<scope>: missing <name>; <hint>`, or at the top level, where
// there is no scope to name, `<name>: missing; <hint>`.
func (p *parser) missing(line int, s scope, name, hint string) {
	if hint != "" {
		hint = "; " + hint
	}
	if s.human == "" {
		p.errorf(line, name, "%s: missing%s", name, hint)
		return
	}
	p.errorf(line, s.field(name), "%smissing %s%s", s.prefix(), name, hint)
}

// checkName checks name by the servers' rule, structs.ValidateName, so
// that a spec is refused before it is sent, at the line of the name, for
// what the servers would refuse: `<scope>: <the server's words>`, where s
// is the name's field (id: volume ID "a/b" must not contain '/'; ...).
func (p *parser) checkName(line int, s scope, kind structs.NameKind, name string) bool {
	if err := structs.ValidateName(kind, name); err != nil {
		p.badIn(line, s, "%v", err)
		return false
	}
	return true
}

// once records a field of s that may appear once; a repeat is an error.
func (p *parser) once(seen map[string]int, f *field, s scope) bool {
	if first, dup := seen[f.name]; dup {
		p.bad(f.line, s, f.name, "is set twice (first at line %d)", first)
		return false
	}
	seen[f.name] = f.line
	return true
}

// unknown reports a field s does not have, with the likeliest intended
// name, which it returns ("" for none).
func (p *parser) unknown(f *field, s scope, known []string) string {
	if sg := suggest(f.name, known); sg != "" {
		p.errorf(f.line, s.field(f.name), "%sunknown field %q; did you mean %q?", s.prefix(), f.name, sg)
		return sg
	}
	p.errorf(f.line, s.field(f.name), "%sunknown field %q; valid fields are %s", s.prefix(), f.name, strings.Join(known, ", "))
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
	if sg := p.unknown(f, s, known); sg != "" {
		fs.guessed[sg] = true
	}
}

// has reports whether name was set, or a misspelling of it was reported.
func (fs *fields) has(name string) bool {
	_, ok := fs.seen[name]
	return ok || fs.guessed[name]
}

// str reads a string.
func (p *parser) str(f *field, s scope) (string, bool) {
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

// boolean reads a bool.
func (p *parser) boolean(f *field, s scope) (bool, bool) {
	if f.val.kind == kindBool {
		return f.val.b, true
	}
	hint := ""
	if f.val.kind == kindString && (f.val.str == "true" || f.val.str == "false") {
		hint = "; leave out the quotes"
	}
	p.bad(f.line, s, f.name, "must be true or false, not %s%s", f.val.describe(), hint)
	return false, false
}

// integer reads a whole number that fits in 32 bits.
func (p *parser) integer(f *field, s scope) (int, bool) {
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
	switch {
	case errors.Is(err, strconv.ErrRange) && strings.HasPrefix(f.val.str, "-"):
		p.bad(f.line, s, f.name, "%s is too small; the least is %d", f.val.str, math.MinInt32)
		return 0, false
	case errors.Is(err, strconv.ErrRange):
		p.bad(f.line, s, f.name, "%s is too large; the most is %d", f.val.str, math.MaxInt32)
		return 0, false
	case err != nil:
		p.bad(f.line, s, f.name, "must be a whole number, not %s", f.val.str)
		return 0, false
	}
	return int(n), true
}

// duration reads a duration written as "30s" or "5m". The API's JSON
// form writes durations in nanoseconds, so a number is taken as such there.
func (p *parser) duration(f *field, s scope) (time.Duration, bool) {
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

// size reads a byte count from a size string or a number of bytes. Its
// message is ParseSize's, which quotes the value: `<scope>: <name>: "1GiG"
// has an unknown unit ...`.
func (p *parser) size(f *field, s scope) (int64, bool) {
	switch f.val.kind {
	case kindString, kindNumber:
		n, err := ParseSize(f.val.str)
		if err != nil {
			p.badIn(f.line, s.sub(f.name), "%v", err)
			return 0, false
		}
		return n, true
	}
	p.bad(f.line, s, f.name, "must be a size such as \"10GiB\" or a number of bytes, not %s", f.val.describe())
	return 0, false
}

// strList reads a list of strings.
func (p *parser) strList(f *field, s scope) []string {
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

// strMap reads a block or an object of name = "value" pairs (env,
// secrets, segments). Numbers and bools are taken as their text; nulls
// are left out.
func (p *parser) strMap(f *field, s scope) map[string]string {
	b := p.block(f, s)
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

// block reads a block that appears once and takes no label (config,
// capability, mount_options). A one-object list is the JSON form of one
// block.
func (p *parser) block(f *field, s scope) *node {
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

// blocks reads one occurrence of a block that may repeat (capability,
// volume_mount): one block or, in JSON, a list of them.
func (p *parser) blocks(f *field, s scope) []*node {
	if f.val.kind != kindList {
		if b := p.block(f, s); b != nil {
			return []*node{b}
		}
		return nil
	}
	var out []*node
	for _, item := range f.val.items {
		if item.kind != kindObject {
			p.bad(item.line, s, f.name, "must be a block (%s { ... }), not %s", f.name, item.describe())
			continue
		}
		out = append(out, item)
	}
	return out
}

// label reads the one label of a labelled block (group "db"). ok is
// false, the problem reported, when it has none or several.
func (p *parser) label(f *field, s scope) (string, bool) {
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

// oneOf reads a string that must be one of valid, suggesting the closest
// when it is not.
func (p *parser) oneOf(f *field, s scope, valid []string) (string, bool) {
	v, ok := p.str(f, s)
	if !ok {
		return "", false
	}
	for _, x := range valid {
		if v == x {
			return v, true
		}
	}
	msg := fmt.Sprintf("%q is not valid; one of %s", v, quoteList(valid))
	if sg := suggest(v, valid); sg != "" {
		msg += fmt.Sprintf("; did you mean %q?", sg)
	}
	p.bad(f.line, s, f.name, "%s", msg)
	return "", false
}

// lineOr is the line field name was set at, else def.
func lineOr(seen map[string]int, name string, def int) int {
	if l, ok := seen[name]; ok {
		return l
	}
	return def
}
