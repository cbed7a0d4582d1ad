package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// shortIDLength is how much of a generated ID lists show without -verbose.
const shortIDLength = 8

// shortID cuts a generated ID (node, allocation) to its first characters
// unless verbose. Volume and plugin IDs are names people chose and are
// never cut.
func shortID(id string, verbose bool) string {
	if verbose || len(id) <= shortIDLength {
		return id
	}
	return id[:shortIDLength]
}

// table writes rows under a header, columns aligned with two spaces and
// no trailing blanks.
func table(w io.Writer, header []string, rows [][]string) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		_, _ = io.WriteString(w, strings.TrimRight(line, " \n")+"\n")
	}
}

// kv writes "Key = value" lines with the "=" aligned.
func kv(w io.Writer, pairs [][2]string) {
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	for _, p := range pairs {
		fmt.Fprintf(tw, "%s\t= %s\n", p[0], p[1])
	}
	_ = tw.Flush()
}

// section writes a blank line and a heading.
func section(w io.Writer, title string) {
	fmt.Fprintf(w, "\n%s\n", title)
}

// printJSON writes the API's JSON as it came, indented.
func printJSON(w io.Writer, raw json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "    "); err != nil {
		return fmt.Errorf("the API answered with malformed JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// orNone shows an empty value as <none>.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// healthy shows an instance's health as a word.
func healthy(ok bool) string {
	if ok {
		return "healthy"
	}
	return "unhealthy"
}

// humanBytes shows a byte count in binary units.
func humanBytes(n int64) string {
	if n <= 0 {
		return "<none>"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// formatTime shows a time in RFC 3339, local zone; zero is <none>.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "<none>"
	}
	return t.Local().Format(time.RFC3339)
}

// formatMap shows a map as "k=v, k=v", sorted.
func formatMap(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ", ")
}
