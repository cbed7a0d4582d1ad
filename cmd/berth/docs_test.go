package main_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/cmd/berth/internal/agent"
	"github.com/berth-csi/berth/cmd/berth/internal/command"
)

// The docs (README.md and docs/*.md) stay true to the repository and to
// the CLI:
//   - TestDocs_Links: every link points at a file inside the repository
//     (and, with #anchor, at a heading of it), and no http(s) link leaves
//     it but those of docAllowedURLs;
//   - TestDocs_RepoPaths: a path of the repository named in the text
//     (`harness/chaos`, docs/job-spec.md) exists;
//   - TestDocs_NoBareIssueNumbers: no "issue 14" a reader cannot look up;
//   - TestDocs_CLI: every command `berth -help` lists, and the
//     subcommands each group's help lists, agree; the README's CLI list
//     names every command (and no other); docs/cli.md is the commands'
//     own help text, as `go test ./cmd/berth -run TestDocs_CLI -update`
//     writes it.

var docUpdate = flag.Bool("update", false, "rewrite docs/cli.md from the commands' help text")

// docRoot is the repository's root, from this package's directory.
const docRoot = "../.."

// docAllowedURLs are the only http(s) addresses the docs may show as
// links (markdown links, <autolinks>, or bare in the text, which GitHub
// renders as links), by prefix, each with why it may stay. Addresses in
// code (a ``` block or `code`) are commands and files to type, not links.
var docAllowedURLs = map[string]string{
	"http://127.0.0.1:": "the reader's own agent, as the walkthroughs start it (the README's web UI)",
}

// docFiles are the documents checked: README.md and docs/*.md, relative
// to docRoot.
func docFiles(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(docRoot, "docs", "*.md"))
	must.NoError(t, err)
	must.SliceNotEmpty(t, paths, must.Sprint("no docs/*.md found"))
	files := []string{"README.md"}
	for _, p := range paths {
		rel, err := filepath.Rel(docRoot, p)
		must.NoError(t, err)
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

// docText is a document read for checking: code is blanked out (spaces,
// newlines kept, so offsets still give line numbers) in two ways.
type docText struct {
	name string // relative to docRoot, with slashes
	raw  string
	// prose has fenced blocks and `code spans` blanked: what renders as
	// text and links.
	prose string
	// withSpans has fenced blocks blanked, code spans kept (their
	// backticks blanked).
	withSpans string
}

func readDoc(t *testing.T, name string) *docText {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(docRoot, name))
	must.NoError(t, err)
	raw := string(b)
	unfenced := blankFences(raw)
	return &docText{name: name, raw: raw, prose: blankSpans(unfenced, true), withSpans: blankSpans(unfenced, false)}
}

// line is the 1-based line of offset off.
func (d *docText) line(off int) int { return strings.Count(d.raw[:off], "\n") + 1 }

var docFence = regexp.MustCompile("^ {0,3}(```+|~~~+)")

// blankFences blanks every fenced code block, its fences included.
func blankFences(s string) string {
	lines := strings.SplitAfter(s, "\n")
	fence := ""
	for i, l := range lines {
		m := docFence.FindStringSubmatch(l)
		switch {
		case fence == "" && m != nil:
			fence = m[1]
		case fence != "" && m != nil && m[1][0] == fence[0] && len(m[1]) >= len(fence) &&
			strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), string(fence[0]))) == "":
			fence = ""
		case fence == "":
			continue
		}
		lines[i] = blank(l)
	}
	return strings.Join(lines, "")
}

// blankSpans blanks the backticks of each code span, and with contents
// its contents too. A span may cross a line break.
func blankSpans(s string, contents bool) string {
	b := []byte(s)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(b) && b[i+n] == '`' {
			n++
		}
		end := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(b) && b[j+m] == '`' {
				m++
			}
			if m == n {
				end = j
				break
			}
			j += m
		}
		if end < 0 {
			i += n // a lone backtick is text
			continue
		}
		for k := i; k < end+n; k++ {
			inside := k >= i+n && k < end
			if (!inside || contents) && b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = end + n
	}
	return string(b)
}

func blank(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' {
			return r
		}
		return ' '
	}, s)
}

var (
	// docInlineLink is [text](target "title") and ![alt](target).
	docInlineLink = regexp.MustCompile(`\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// docRefLink is a reference definition: [name]: target
	docRefLink = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	// docURL is any http(s) address in the text: a link's target, an
	// <autolink>, or a bare one.
	docURL = regexp.MustCompile(`(?i)https?://[^\s<>()\[\]"'` + "`" + `]*`)
	// docScheme is a target with a scheme (mailto:, ftp:, https:).
	docScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// docLink is one link found in a document.
type docLink struct {
	line   int
	target string
}

func (d *docText) links() []docLink {
	var out []docLink
	for _, re := range []*regexp.Regexp{docInlineLink, docRefLink} {
		for _, m := range re.FindAllStringSubmatchIndex(d.prose, -1) {
			out = append(out, docLink{line: d.line(m[2]), target: d.prose[m[2]:m[3]]})
		}
	}
	return out
}

// TestDocs_Links: every link of README.md and docs/*.md points at a file
// of the repository, and an #anchor at a heading of it; none leaves the
// repository, by a relative path out of it or by an http(s) address not
// in docAllowedURLs.
func TestDocs_Links(t *testing.T) {
	root, err := filepath.Abs(docRoot)
	must.NoError(t, err)
	used := map[string]bool{}
	var bad []string
	checked := 0
	for _, name := range docFiles(t) {
		d := readDoc(t, name)
		for _, m := range docURL.FindAllStringIndex(d.prose, -1) {
			u := strings.TrimRight(d.prose[m[0]:m[1]], ".,;:!?")
			prefix := docAllowedPrefix(u)
			if prefix == "" {
				bad = append(bad, fmt.Sprintf("%s:%d: %s leaves the repository: link to a file in it instead, or add the address to docAllowedURLs with a reason", name, d.line(m[0]), u))
				continue
			}
			used[prefix] = true
		}
		for _, l := range d.links() {
			checked++
			if docScheme.MatchString(l.target) {
				if !strings.HasPrefix(strings.ToLower(l.target), "http") {
					bad = append(bad, fmt.Sprintf("%s:%d: %s: only links to files of the repository are allowed", name, l.line, l.target))
				}
				continue // http(s): checked above
			}
			if msg := checkDocLink(root, name, l.target); msg != "" {
				bad = append(bad, fmt.Sprintf("%s:%d: %s: %s", name, l.line, l.target, msg))
			}
		}
	}
	for prefix, reason := range docAllowedURLs {
		must.NotEq(t, "", reason, must.Sprintf("docAllowedURLs[%q] needs a reason", prefix))
		if !used[prefix] {
			bad = append(bad, fmt.Sprintf("docAllowedURLs[%q] is used by no doc: remove it", prefix))
		}
	}
	must.Greater(t, 20, checked, must.Sprint("the docs link to each other; the test finds few links"))
	must.SliceEmpty(t, bad, must.Sprintf("broken or outside links:\n%s", strings.Join(bad, "\n")))
}

func docAllowedPrefix(u string) string {
	for prefix := range docAllowedURLs {
		if strings.HasPrefix(u, prefix) {
			return prefix
		}
	}
	return ""
}

// checkDocLink checks one relative target of document name; it returns
// what is wrong, or "".
func checkDocLink(root, name, target string) string {
	path, anchor, _ := strings.Cut(target, "#")
	path, err := url.PathUnescape(path)
	if err != nil {
		return "not a path: " + err.Error()
	}
	file := filepath.Join(root, filepath.FromSlash(name))
	if path != "" {
		if strings.HasPrefix(path, "/") {
			return "an absolute path: write it relative to " + name
		}
		file = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
	}
	rel, err := filepath.Rel(root, file)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "outside the repository"
	}
	st, err := os.Stat(file)
	if err != nil {
		return "no such file in the repository"
	}
	if anchor == "" || st.IsDir() || !strings.HasSuffix(file, ".md") {
		return ""
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	anchors := docAnchors(string(b))
	if !anchors[anchor] {
		return fmt.Sprintf("%s has no heading with the anchor #%s", filepath.ToSlash(rel), anchor)
	}
	return ""
}

var (
	docHeading  = regexp.MustCompile(`(?m)^ {0,3}#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$`)
	docHTMLName = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// docAnchors are the anchors GitHub gives a document's headings (and any
// <a name> or <a id>).
func docAnchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range docHeading.FindAllStringSubmatch(blankFences(md), -1) {
		slug := docSlug(m[1])
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	for _, m := range docHTMLName.FindAllStringSubmatch(md, -1) {
		out[m[1]] = true
	}
	return out
}

// docSlug is GitHub's anchor for a heading: lower case, spaces to
// hyphens, and nothing kept but letters, digits, '_' and '-'.
func docSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestDocSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"What this does not cover (yet)":                         "what-this-does-not-cover-yet",
		"Day 2: update a job, drain a node, back up the cluster": "day-2-update-a-job-drain-a-node-back-up-the-cluster",
		"Fence: a cut-off client stops its writers":              "fence-a-cut-off-client-stops-its-writers",
		"berth job plan":     "berth-job-plan",
		"The `update` block": "the-update-block",
	} {
		must.EqOp(t, want, docSlug(heading), must.Sprint(heading))
	}
	anchors := docAnchors("# A\n\n```sh\n# not a heading\n```\n\n## A\n## B ##\n")
	must.Eq(t, map[string]bool{"a": true, "a-1": true, "b": true}, anchors)
}

// TestDocs_RepoPaths: a path of the repository named in the text or in a
// code span (`harness/chaos`, docs/job-spec.md, ../examples/x.hcl) names
// a file or directory the repository has. A path starts with one of the
// repository's top-level directories; one after a '/' or '$' (an HTTP
// route, a path in an agent's data dir) is not one.
func TestDocs_RepoPaths(t *testing.T) {
	entries, err := os.ReadDir(docRoot)
	must.NoError(t, err)
	var tops []string
	for _, e := range entries {
		// bin/ and .tools/ are what make builds, not the repository's.
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() != "bin" {
			tops = append(tops, regexp.QuoteMeta(e.Name()))
		}
	}
	must.SliceContains(t, tops, "docs")
	re := regexp.MustCompile(`(?:^|[^A-Za-z0-9_/$.~<{-])((?:\.\./)*(?:` + strings.Join(tops, "|") + `)/[A-Za-z0-9_./*-]*)`)
	var bad []string
	checked := 0
	for _, name := range docFiles(t) {
		d := readDoc(t, name)
		for _, m := range re.FindAllStringSubmatchIndex(d.withSpans, -1) {
			p := strings.TrimRight(d.withSpans[m[2]:m[3]], ".,:;")
			checked++
			if !docPathExists(name, p) {
				bad = append(bad, fmt.Sprintf("%s:%d: %s: no such file or directory in the repository", name, d.line(m[2]), p))
			}
		}
	}
	must.Greater(t, 20, checked, must.Sprint("the docs name the repository's files; the test finds few"))
	must.SliceEmpty(t, bad, must.Sprintf("paths the repository lacks:\n%s", strings.Join(bad, "\n")))
}

// docPathExists reports whether p, named in document name, exists: from
// the document's directory when it starts with "../", else from the
// repository's root. A Go name after a package's path
// (client/csi.Pool) is the package's.
func docPathExists(name, p string) bool {
	base := docRoot
	if strings.HasPrefix(p, "../") {
		base = filepath.Join(docRoot, filepath.Dir(name))
	}
	candidates := []string{p}
	if i := strings.LastIndexByte(p, '.'); i > strings.LastIndexByte(p, '/') && i+1 < len(p) && unicode.IsUpper(rune(p[i+1])) {
		candidates = append(candidates, p[:i])
	}
	for _, c := range candidates {
		full := filepath.Join(base, filepath.FromSlash(c))
		if strings.Contains(c, "*") {
			if ms, _ := filepath.Glob(full); len(ms) > 0 {
				return true
			}
			continue
		}
		if _, err := os.Stat(full); err == nil {
			return true
		}
	}
	return false
}

// docIssueRef is a reference to an issue by number: "issue 14", "issues
// 12 and 14", "#31". One that names its repository ("hashicorp/nomad
// issue 13380", "hashicorp/nomad#13380") can be looked up; a bare one
// cannot.
var (
	docIssueRef   = regexp.MustCompile(`(?i)(\S*)(?:\bissues?\s+#?[0-9]+|#[0-9]+\b)`)
	docRepoBefore = regexp.MustCompile(`[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+\s*$`)
)

// TestDocs_NoBareIssueNumbers: the README and docs cite no issue by a
// number a reader cannot look up. docs/architecture.md, the design
// record, is left out.
func TestDocs_NoBareIssueNumbers(t *testing.T) {
	var bad []string
	for _, name := range docFiles(t) {
		if name == "docs/architecture.md" {
			continue
		}
		d := readDoc(t, name)
		for _, m := range docIssueRef.FindAllStringSubmatchIndex(d.withSpans, -1) {
			ref := d.withSpans[m[0]:m[1]]
			before := d.withSpans[max(0, m[0]-40):m[0]]
			if strings.Contains(ref, "/") || docRepoBefore.MatchString(before) {
				continue // owner/repo#N, or "owner/repo issue N"
			}
			bad = append(bad, fmt.Sprintf("%s:%d: %q: say what changed, or name the repository (owner/repo#N)", name, d.line(m[0]), strings.TrimSpace(ref)))
		}
	}
	must.SliceEmpty(t, bad, must.Sprintf("issue numbers a reader cannot look up:\n%s", strings.Join(bad, "\n")))
}

// docRun runs the berth CLI in this process, as `berth args...`, and
// returns what it printed (stdout, then stderr) and its exit status.
func docRun(args ...string) (string, int) {
	var stdout, stderr bytes.Buffer
	app := &command.App{
		Stdin:  strings.NewReader(""),
		Stdout: &stdout,
		Stderr: &stderr,
		Getenv: func(string) string { return "" },
		Agent:  agent.Run,
	}
	code := app.Run(context.Background(), args)
	return stdout.String() + stderr.String(), code
}

var docCommandRow = regexp.MustCompile(`^    (\S+(?: \S+)*?)  +\S`)

// docCommandRows reads the command names of a help text's list under
// header ("Commands:", "Subcommands:").
func docCommandRows(t *testing.T, help, header string) []string {
	t.Helper()
	_, list, ok := strings.Cut(help, "\n"+header+"\n")
	must.True(t, ok, must.Sprintf("no %q in:\n%s", header, help))
	var names []string
	for _, l := range strings.Split(list, "\n") {
		m := docCommandRow.FindStringSubmatch(l)
		if m == nil {
			break
		}
		names = append(names, m[1])
	}
	must.SliceNotEmpty(t, names, must.Sprintf("no rows under %q in:\n%s", header, help))
	return names
}

// docCommands are the commands `berth -help` lists; each group's help
// (`berth volume -h`, `berth volume snapshot -h`) must list the same
// commands under it.
func docCommands(t *testing.T) []string {
	t.Helper()
	help, code := docRun("-help")
	must.EqOp(t, 0, code, must.Sprint(help))
	names := docCommandRows(t, help, "Commands:")
	must.SliceContains(t, names, "agent")
	must.SliceContains(t, names, "version")

	groups := map[string][]string{}
	for _, n := range names {
		words := strings.Fields(n)
		for i := 1; i < len(words); i++ {
			g := strings.Join(words[:i], " ")
			groups[g] = append(groups[g], strings.Join(words[i:], " "))
		}
	}
	must.MapContainsKey(t, groups, "volume")
	for g, want := range groups {
		if slices.Contains(names, g) {
			continue // a command that is also a group: none today
		}
		out, code := docRun(append(strings.Fields(g), "-h")...)
		must.EqOp(t, 0, code, must.Sprintf("berth %s -h:\n%s", g, out))
		got := docCommandRows(t, out, "Subcommands:")
		sort.Strings(got)
		sort.Strings(want)
		must.Eq(t, want, got, must.Sprintf("berth %s -h lists other subcommands than berth -help:\n%s", g, out))
	}
	return names
}

// TestDocs_CLI: the README's CLI list names every command of `berth
// -help` and no other, and docs/cli.md holds every command's help text
// as the commands print it (-update rewrites it).
func TestDocs_CLI(t *testing.T) {
	names := docCommands(t)

	// The README's list: the fenced block of "## The CLI" whose lines
	// start with "berth ".
	readme := readDoc(t, "README.md").raw
	_, section, ok := strings.Cut(readme, "\n## The CLI\n")
	must.True(t, ok, must.Sprint(`README.md has no "## The CLI" section`))
	section, _, _ = strings.Cut(section, "\n## ")
	var listed []string
	inFence := false
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(l, "```") {
			inFence = !inFence
			continue
		}
		if inFence && strings.HasPrefix(l, "berth ") {
			listed = append(listed, strings.TrimPrefix(l, "berth "))
		}
	}
	must.SliceNotEmpty(t, listed, must.Sprint(`README.md's "The CLI" has no fenced list of "berth ..." lines`))
	var missing, unknown []string
	for _, n := range names {
		if !slices.ContainsFunc(listed, func(l string) bool { return l == n || strings.HasPrefix(l, n+" ") }) {
			missing = append(missing, n)
		}
	}
	for _, l := range listed {
		if !slices.ContainsFunc(names, func(n string) bool { return l == n || strings.HasPrefix(l, n+" ") }) {
			unknown = append(unknown, l)
		}
	}
	must.SliceEmpty(t, missing, must.Sprintf(`commands of "berth -help" missing from README.md's "The CLI" list: %q`, missing))
	must.SliceEmpty(t, unknown, must.Sprintf(`README.md's "The CLI" lists what is no command of "berth -help": %q`, unknown))

	// docs/cli.md, generated.
	want := docCLIReference(t, names)
	path := filepath.Join(docRoot, "docs", "cli.md")
	if *docUpdate {
		must.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		t.Logf("wrote %s", path)
	}
	got, err := os.ReadFile(path)
	must.NoError(t, err, must.Sprint("docs/cli.md is made by: go test ./cmd/berth -run TestDocs_CLI -update"))
	if string(got) != want {
		line, g, w := docFirstDiff(string(got), want)
		t.Fatalf("docs/cli.md is not the commands' help text: run\n\tgo test ./cmd/berth -run TestDocs_CLI -update\nfirst difference at line %d:\n got: %q\nwant: %q", line, g, w)
	}
	for _, n := range names {
		must.StrContains(t, string(got), "\n## berth "+n+"\n", must.Sprintf("docs/cli.md has no section for %q", n))
	}
	index, err := os.ReadFile(filepath.Join(docRoot, "docs", "README.md"))
	must.NoError(t, err)
	must.StrContains(t, string(index), "](cli.md)", must.Sprint("docs/README.md must link cli.md"))
}

func docFirstDiff(got, want string) (int, string, string) {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return i + 1, gl, wl
		}
	}
	return 0, "", ""
}

const docGeneralHeader = "General Options:\n"

// docCLIReference is docs/cli.md: `berth -help`, the general options
// once, then each command's own -h text without them.
func docCLIReference(t *testing.T, names []string) string {
	t.Helper()
	mainHelp, _ := docRun("-help")
	var b strings.Builder
	b.WriteString(`# The berth CLI

<!-- Generated from the commands' own help text by
     go test ./cmd/berth -run TestDocs_CLI -update
     Do not edit it here: change the help in cmd/berth/internal/command
     (cmd/berth/internal/agent for agent) and run that again. -->

What ` + "`berth <command> -h`" + ` prints for each command. The
[README](../README.md#the-cli) says how the commands reach an agent
(addresses, exit statuses) and walks through them.

## Commands

` + "```text\n" + mainHelp + "```\n")

	general := ""
	var sections strings.Builder
	for _, n := range names {
		fmt.Fprintf(&sections, "\n## berth %s\n\n", n)
		if n == "version" {
			out, code := docRun("version")
			must.EqOp(t, 0, code)
			must.StrHasPrefix(t, "berth v", out)
			sections.WriteString("`berth version` (or `berth -v`, `-version`) prints the version of the\nberth binary, as `berth v<version>`.\n")
			continue
		}
		out, code := docRun(append(strings.Fields(n), "-h")...)
		must.EqOp(t, 0, code, must.Sprintf("berth %s -h:\n%s", n, out))
		must.StrHasPrefix(t, "Usage: berth "+n, out, must.Sprintf("berth %s -h", n))
		own, gen, hasGeneral := strings.Cut(out, docGeneralHeader)
		if n != "agent" {
			must.True(t, hasGeneral, must.Sprintf("berth %s -h has no %q", n, docGeneralHeader))
			if general == "" {
				general = gen
			}
			must.EqOp(t, general, gen, must.Sprintf("berth %s -h: its general options differ from the other commands'", n))
		}
		fmt.Fprintf(&sections, "```text\n%s\n```\n", strings.TrimRight(own, "\n"))
	}
	must.NotEq(t, "", general)
	b.WriteString("\n## General options\n\nEvery command but `agent` and `version` takes these, before or after its\nname:\n\n```text\n" +
		docGeneralHeader + strings.TrimRight(general, "\n") + "\n```\n")
	b.WriteString(sections.String())
	return b.String()
}
