package main_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// The README's walkthroughs, read as steps. In a ```sh block:
//   - a line "$ CMD" is a command, and the lines after it, up to the next
//     command, are what it prints (lines that are only a comment, "# ...",
//     and "..." are left out; what is shown must appear in that order);
//   - "$ cat FILE" followed by text is the file's content: the test
//     writes it;
//   - a block with no "$" is commands alone, one a line (long-running
//     ones, such as agents, are started in the background);
//   - "# ..." after a command is a comment; "CMD &" runs in the background.

// readmeStep is one command of a walkthrough.
type readmeStep struct {
	line int      // README line of the command
	cmd  string   // without its comment
	want []string // what it prints, as shown
	file string   // for "cat FILE": the file's content
	bg   bool     // runs in the background
}

// readmeSections returns the ```sh blocks of each "## " section, by title.
func readmeSections(md string) map[string][][]numberedLine {
	out := map[string][][]numberedLine{}
	title := ""
	var block []numberedLine
	inSh, inOther := false, false
	for i, l := range strings.Split(md, "\n") {
		switch {
		case inSh && strings.HasPrefix(l, "```"):
			out[title] = append(out[title], block)
			block, inSh = nil, false
		case inSh:
			block = append(block, numberedLine{i + 1, l})
		case inOther && strings.HasPrefix(l, "```"):
			inOther = false
		case inOther:
		case strings.HasPrefix(l, "```sh"):
			inSh = true
		case strings.HasPrefix(l, "```"):
			inOther = true
		case strings.HasPrefix(l, "## "):
			title = strings.TrimPrefix(l, "## ")
		}
	}
	return out
}

type numberedLine struct {
	n    int
	text string
}

// readmeSteps reads one block's steps.
func readmeSteps(block []numberedLine) []readmeStep {
	prompted := false
	for _, l := range block {
		prompted = prompted || strings.HasPrefix(l.text, "$ ")
	}
	var steps []readmeStep
	for i := 0; i < len(block); i++ {
		l := block[i]
		text := l.text
		if !prompted {
			if isComment(text) || strings.TrimSpace(text) == "" {
				continue
			}
		} else if !strings.HasPrefix(text, "$ ") {
			continue // output of no command: prose in a block
		} else {
			text = strings.TrimPrefix(text, "$ ")
		}
		for strings.HasSuffix(strings.TrimSpace(text), `\`) && i+1 < len(block) {
			i++
			text = strings.TrimSuffix(strings.TrimSpace(text), `\`) + " " + strings.TrimSpace(block[i].text)
		}
		st := readmeStep{line: l.n, cmd: strings.TrimSpace(stripComment(text))}
		if strings.HasSuffix(st.cmd, "&") {
			st.bg, st.cmd = true, strings.TrimSpace(strings.TrimSuffix(st.cmd, "&"))
		}
		if prompted {
			var out []string
			for i+1 < len(block) && !strings.HasPrefix(block[i+1].text, "$ ") {
				i++
				out = append(out, block[i].text)
			}
			if _, ok := strings.CutPrefix(st.cmd, "cat "); ok {
				st.file = strings.TrimRight(strings.Join(out, "\n"), "\n ") + "\n"
			} else {
				for _, o := range out {
					if t := strings.TrimSpace(o); t != "" && t != "..." && !isComment(o) {
						st.want = append(st.want, o)
					}
				}
			}
		}
		steps = append(steps, st)
	}
	return steps
}

func isComment(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "#") }

// stripComment removes a " # comment" that is outside quotes.
func stripComment(s string) string {
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && i > 0 && (s[i-1] == ' ' || s[i-1] == '\t'):
			return s[:i]
		}
	}
	return s
}

// Tokens that differ from run to run, by kind: a shown one matches any
// actual one of its kind. IDs are bound: the same shown ID must be the
// same actual ID everywhere in a walkthrough, and later commands and
// files get the actual one.
var readmeKinds = []struct {
	name  string
	re    *regexp.Regexp
	bound bool
}{
	{"uuid", regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`), true},
	{"provider id", regexp.MustCompile(`^(vol|snap)-[0-9a-f]{16}$`), true},
	{"short id", regexp.MustCompile(`^[0-9a-f]{8}$`), true},
	// A gossip key from `berth operator gossip keygen`: 32 bytes, base64.
	// (its "=" is punctuation to splitCore, so the core is 43 characters).
	{"key", regexp.MustCompile(`^[A-Za-z0-9+/]{43}$`), true},
	{"time", regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`), false},
	{"duration", regexp.MustCompile(`^(\d+(\.\d+)?(ns|µs|us|ms|s|m|h))+$`), false},
	// Which server leads is the election's choice.
	{"leadership", regexp.MustCompile(`^(true|false|leader|follower)$`), false},
}

// readmeKind is the kind of a token's core, or "".
func readmeKind(core string) (string, bool) {
	for _, k := range readmeKinds {
		if k.re.MatchString(core) {
			return k.name, k.bound
		}
	}
	return "", false
}

// splitCore splits a token into punctuation around its core.
func splitCore(tok string) (pre, core, post string) {
	const punct = "\"'`,.:;()[]{}<>="
	core = strings.TrimLeft(tok, punct)
	pre = tok[:len(tok)-len(core)]
	trimmed := strings.TrimRight(core, punct)
	return pre, trimmed, core[len(trimmed):]
}

// matchLine matches one shown line against an actual one, adding to
// bind (shown ID -> actual ID) what it binds. It reports whether they
// match.
func matchLine(shown, got string, bind map[string]string) bool {
	st, gt := strings.Fields(shown), strings.Fields(got)
	if len(st) != len(gt) {
		return false
	}
	added := map[string]string{}
	for i := range st {
		if st[i] == gt[i] {
			continue
		}
		sp, sc, ss := splitCore(st[i])
		gp, gc, gs := splitCore(gt[i])
		kind, bound := readmeKind(sc)
		if kind == "" || sp != gp || ss != gs {
			return false
		}
		if k, _ := readmeKind(gc); k != kind {
			return false
		}
		if !bound {
			continue
		}
		if prev, ok := bind[sc]; ok && prev != gc {
			return false
		}
		if prev, ok := added[sc]; ok && prev != gc {
			return false
		}
		added[sc] = gc
	}
	for k, v := range added {
		bind[k] = v
	}
	return true
}

// matchOutput finds the shown lines, in order, among the actual ones. It
// returns the bindings they made, or an error saying which line was not
// found.
func matchOutput(shown []string, got string, bind map[string]string) (map[string]string, error) {
	trial := make(map[string]string, len(bind))
	for k, v := range bind {
		trial[k] = v
	}
	lines := strings.Split(got, "\n")
	at := 0
	for _, s := range shown {
		found := false
		for ; at < len(lines); at++ {
			if matchLine(s, lines[at], trial) {
				found, at = true, at+1
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("shown line %q is not in what the command printed (after the lines matched before it)", s)
		}
	}
	return trial, nil
}

// hexWord finds words that may be IDs or ID prefixes in a command: whole
// UUIDs first (so that one is replaced whole, not by its parts), then hex
// words, provider IDs and gossip keys.
var hexWord = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[0-9a-f]{4,}\b|\b(vol|snap)-[0-9a-f]{16}\b|[A-Za-z0-9+/]{43}=`)

// substitute puts the actual IDs bound so far in place of the shown ones
// in a command or file: whole IDs, and prefixes of them (as "2b3d" for
// "2b3df4c3"), which become the same length of the actual ID.
func substitute(s string, bind map[string]string) string {
	return hexWord.ReplaceAllStringFunc(s, func(w string) string {
		if v, ok := bind[w]; ok {
			return v
		}
		if key, ok := strings.CutSuffix(w, "="); ok {
			if v, ok := bind[key]; ok {
				return v + "="
			}
			return w
		}
		for shown, actual := range bind {
			if strings.HasPrefix(shown, w) && len(actual) >= len(w) {
				return actual[:len(w)]
			}
		}
		return w
	})
}

// TestReadmeMatch: shown IDs, times and durations match actual ones of
// their kind; an ID is bound to one actual ID and put in later commands,
// prefixes too; anything else must be the same.
func TestReadmeMatch(t *testing.T) {
	bind := map[string]string{}
	got := "noise\nAllocation \"9f00aa11\" placed on node \"7cca0000\" (group \"writer\")\nSnapshot \"snap-00112233445566ff\" taken in 12.5ms\nmore"
	b, err := matchOutput([]string{
		`    Allocation "2b3df4c3" placed on node "7cca083e" (group "writer")`,
		`    Snapshot "snap-7a2270fd197b12cd" taken in 3ms`,
	}, got, bind)
	must.NoError(t, err)
	must.Eq(t, map[string]string{"2b3df4c3": "9f00aa11", "7cca083e": "7cca0000", "snap-7a2270fd197b12cd": "snap-00112233445566ff"}, b)
	must.EqOp(t, "berth alloc status 9f00 && berth volume snapshot delete hostpath snap-00112233445566ff",
		substitute("berth alloc status 2b3d && berth volume snapshot delete hostpath snap-7a2270fd197b12cd", b))

	// A whole UUID (a token's Secret ID) and a gossip key are replaced whole.
	kb, err := matchOutput([]string{
		`Secret ID   = 15e3aa93-1ef0-b779-834b-7ddfbe8b6c6d`,
		`Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo=`,
	}, "Secret ID   = 0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9\nQUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=", map[string]string{})
	must.NoError(t, err)
	must.EqOp(t, `export BERTH_TOKEN=0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9; encrypt = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY="`,
		substitute(`export BERTH_TOKEN=15e3aa93-1ef0-b779-834b-7ddfbe8b6c6d; encrypt = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo="`, kb))

	for _, tc := range []struct{ shown, got string }{
		{`Allocation "2b3df4c3": pending -> running`, `Allocation "2b3df4c3": pending -> failed`},
		{`node "7cca083e"`, `node "12345678"`},   // 7cca083e is bound to 7cca0000
		{`Created "data"`, `Created "other"`},    // not an ID: must be the same
		{`capacity 1.0 GiB`, `capacity 2.0 GiB`}, // neither
		{`a b`, `a b c`},
	} {
		_, err := matchOutput([]string{tc.shown}, tc.got, b)
		must.Error(t, err, must.Sprintf("%q matched %q", tc.shown, tc.got))
	}
	_, err = matchOutput([]string{"b", "a"}, "a\nb", map[string]string{})
	must.Error(t, err, must.Sprint("shown lines match in order"))
}

// TestReadmeSteps: commands, their output, files, comments and
// background commands are read as the README writes them.
func TestReadmeSteps(t *testing.T) {
	var block []numberedLine
	for i, l := range strings.Split(`$ cat a.hcl
id = "a"   # kept

$ bin/berth volume create a.hcl   # comment
==> Creating volume "a"...
...
    Created "a"
$ bin/berth-hostpath -endpoint unix:///s.sock &
$ sed -e 's/#x/y/' a.hcl`, "\n") {
		block = append(block, numberedLine{i + 1, l})
	}
	steps := readmeSteps(block)
	must.SliceLen(t, 4, steps)
	must.EqOp(t, "id = \"a\"   # kept\n", steps[0].file)
	must.EqOp(t, "bin/berth volume create a.hcl", steps[1].cmd)
	must.Eq(t, []string{`==> Creating volume "a"...`, `    Created "a"`}, steps[1].want)
	must.True(t, steps[2].bg)
	must.EqOp(t, "bin/berth-hostpath -endpoint unix:///s.sock", steps[2].cmd)
	must.EqOp(t, "sed -e 's/#x/y/' a.hcl", steps[3].cmd)
}
