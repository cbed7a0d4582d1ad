package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// architectureDoc is docs/architecture.md, from this package's directory
// (go test runs in it).
var architectureDoc = filepath.Join("..", "..", "..", "docs", "architecture.md")

// TestAllowed_MatchesArchitectureDoc fails when the package table of
// docs/architecture.md ("## Packages") and the allowed map differ: a
// package (or layer prefix) in one and not the other, or a row whose "may
// import" column names other packages than its entry.
func TestAllowed_MatchesArchitectureDoc(t *testing.T) {
	f, err := os.Open(architectureDoc)
	must.NoError(t, err)
	defer f.Close()
	doc, err := parsePackageTable(f)
	must.NoError(t, err)

	for _, d := range diffTables(doc, allowed) {
		t.Error(d)
	}
}

// TestDiffTables shows that the comparison above catches each kind of
// difference, on a table small enough to read.
func TestDiffTables(t *testing.T) {
	code := map[string][]string{
		"structs": {},
		"state":   {"structs"},
		"cmd":     {"*"},
	}
	const header = "## Packages\n\n| package | owns | may import (berth) |\n|---|---|---|\n"
	cases := []struct {
		name string
		rows string
		want []string
	}{
		{"same", "| `structs` | types | nothing |\n| `state` | store | structs |\n| `cmd` | binaries | anything |\n", nil},
		{"row missing", "| `structs` | types | nothing |\n| `cmd` | binaries | anything |\n",
			[]string{`"state" is in importcheck's table but not in docs/architecture.md`}},
		{"row extra", "| `structs` | types | nothing |\n| `state` | store | structs |\n| `cmd` | binaries | anything |\n| `fsm` | raft | state |\n",
			[]string{`"fsm" is in docs/architecture.md but not in importcheck's table`}},
		{"imports differ", "| `structs` | types | nothing |\n| `state` | store | structs, fsm |\n| `cmd` | binaries | anything |\n",
			[]string{`"state" may import [fsm structs] in docs/architecture.md but [structs] in importcheck's table`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := parsePackageTable(strings.NewReader(header + tc.rows + "\nprose\n"))
			must.NoError(t, err)
			must.Eq(t, tc.want, diffTables(doc, code))
		})
	}
}

func TestParsePackageTable_Refuses(t *testing.T) {
	for name, in := range map[string]string{
		"no section":        "# Architecture\n",
		"no table":          "## Packages\n\nprose\n",
		"unquoted package":  "## Packages\n\n| package | owns | may import |\n|---|---|---|\n| structs | types | nothing |\n",
		"too few columns":   "## Packages\n\n| package | owns | may import |\n|---|---|---|\n| `structs` | nothing |\n",
		"duplicate package": "## Packages\n\n| package | owns | may import |\n|---|---|---|\n| `structs` | a | nothing |\n| `structs` | b | nothing |\n",
		"empty imports":     "## Packages\n\n| package | owns | may import |\n|---|---|---|\n| `structs` | types |  |\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parsePackageTable(strings.NewReader(in))
			must.Error(t, err)
		})
	}
}

var quotedPackage = regexp.MustCompile("^`([^`]+)`$")

// parsePackageTable reads the first table under "## Packages": its first
// column is a package in backquotes, its last the berth packages it may
// import, comma-separated, or "nothing", or "anything" (importcheck's "*").
func parsePackageTable(r io.Reader) (map[string][]string, error) {
	sc := bufio.NewScanner(r)
	inSection, inTable, rowNo := false, false, 0
	table := map[string][]string{}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "## ") {
			if inSection {
				break
			}
			inSection = line == "## Packages"
			continue
		}
		if !inSection {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break // the table ended
			}
			continue
		}
		inTable = true
		rowNo++
		if rowNo <= 2 {
			continue // the header and its |---| line
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 {
			return nil, fmt.Errorf("package table row %q: want 3 columns", line)
		}
		m := quotedPackage.FindStringSubmatch(strings.TrimSpace(cells[0]))
		if m == nil {
			return nil, fmt.Errorf("package table row %q: the first column is not one `package`", line)
		}
		pkg := m[1]
		if _, dup := table[pkg]; dup {
			return nil, fmt.Errorf("package table: %q has two rows", pkg)
		}
		imports, err := parseImports(strings.TrimSpace(cells[len(cells)-1]))
		if err != nil {
			return nil, fmt.Errorf("package table row %q: %w", pkg, err)
		}
		table[pkg] = imports
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(table) == 0 {
		return nil, fmt.Errorf(`no package table under "## Packages"`)
	}
	return table, nil
}

func parseImports(cell string) ([]string, error) {
	switch cell {
	case "":
		return nil, fmt.Errorf(`empty "may import" column (write "nothing")`)
	case "nothing":
		return []string{}, nil
	case "anything":
		return []string{"*"}, nil
	}
	var out []string
	for _, p := range strings.Split(cell, ",") {
		p = strings.TrimSpace(p)
		if p == "" || strings.ContainsAny(p, " `") {
			return nil, fmt.Errorf("%q is not a comma-separated list of packages", cell)
		}
		out = append(out, p)
	}
	return out, nil
}

// diffTables names every difference between the doc's table and the
// code's, sorted by package; import lists compare as sets.
func diffTables(doc, code map[string][]string) []string {
	var pkgs []string
	for p := range doc {
		pkgs = append(pkgs, p)
	}
	for p := range code {
		if _, ok := doc[p]; !ok {
			pkgs = append(pkgs, p)
		}
	}
	slices.Sort(pkgs)
	var diffs []string
	for _, p := range pkgs {
		d, inDoc := doc[p]
		c, inCode := code[p]
		switch {
		case !inCode:
			diffs = append(diffs, fmt.Sprintf("%q is in docs/architecture.md but not in importcheck's table", p))
		case !inDoc:
			diffs = append(diffs, fmt.Sprintf("%q is in importcheck's table but not in docs/architecture.md", p))
		default:
			ds, cs := sorted(d), sorted(c)
			if !slices.Equal(ds, cs) {
				diffs = append(diffs, fmt.Sprintf("%q may import %v in docs/architecture.md but %v in importcheck's table", p, ds, cs))
			}
		}
	}
	return diffs
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
