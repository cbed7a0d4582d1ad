package structs

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLength is the longest ID or name berth takes, in bytes. Names
// become directory names on clients (task names, plugin and volume IDs)
// and parts of allocation names, so they stay well under a path
// component's 255 bytes, with room for a per_alloc volume's "[N]".
const MaxNameLength = 128

// NameKind says what a name names; error messages call it so.
type NameKind string

// The kinds of names ValidateName checks.
const (
	NameJobID       NameKind = "job ID"
	NameGroup       NameKind = "group name"
	NameTask        NameKind = "task name"
	NameVolumeID    NameKind = "volume ID"
	NameVolumeAlias NameKind = "volume name"
	NameNamespace   NameKind = "namespace"
	NamePluginID    NameKind = "plugin ID"
)

// ValidateName is berth's one rule for IDs and names: 1 to MaxNameLength
// bytes of UTF-8, each character a printable ASCII one other than a
// space, '/' or '\\', or a letter or digit of another script ("job_é");
// no symbol, emoji, mark or invisible character; no leading '.' (so
// never "." or ".."): each is safe as one path component, in a URL, a log
// line and a terminal. Job IDs and group names also refuse '['
// and ']', because an allocation's name is "job.group[N]"; volume IDs
// keep them, for per_alloc volumes ("data[0]"). The error is a
// BadRequest naming the kind and what is wrong.
func ValidateName(kind NameKind, s string) error {
	bad := func(format string, args ...any) error {
		return NewError(CodeBadRequest, "%s %s %s", kind, QuoteName(s), fmt.Sprintf(format, args...))
	}
	switch {
	case s == "":
		return NewError(CodeBadRequest, "%s is missing", kind)
	case len(s) > MaxNameLength:
		return bad("is %d bytes long; the most is %d", len(s), MaxNameLength)
	case !utf8.ValidString(s):
		return bad("is not valid UTF-8")
	case s[0] == '.':
		return bad("must not start with '.'")
	}
	if i := strings.IndexFunc(s, badNameRune); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return bad("must not contain %q; use letters, digits and ASCII punctuation other than '/' and '\\', without spaces", r)
	}
	if (kind == NameJobID || kind == NameGroup) && strings.ContainsAny(s, "[]") {
		return bad(`must not contain '[' or ']' (an allocation is named "job.group[N]")`)
	}
	return nil
}

// badNameRune is a character no name may hold.
func badNameRune(r rune) bool {
	if r > unicode.MaxASCII {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}
	return r == '/' || r == '\\' || r == ' ' || !unicode.IsGraphic(r)
}

// maxQuotedName is how many bytes of a name QuoteName shows.
const maxQuotedName = 64

// QuoteName quotes a name for a message, shortened when it is long, so
// that a 1 MiB ID in a request is not echoed back in full.
func QuoteName(s string) string {
	if len(s) <= maxQuotedName {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:maxQuotedName], len(s))
}
