package check

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// WriterReport is what WriterFile found in a writer file.
type WriterReport struct {
	Lines      int      // well-formed lines
	Malformed  int      // lines without an alloc ID and a timestamp (a torn last write)
	Writers    []string // allocs in the order of their first line
	Violations []Violation
}

// WriterFile reads a file that a single-writer volume's writers append
// to, one "allocID timestamp" line at a time, and reports every alloc that
// writes again after another alloc began writing: two writers at once.
// Each pair of allocs is reported once.
func WriterFile(volumeID string, r io.Reader) (WriterReport, error) {
	var rep WriterReport
	type line struct {
		n     int
		stamp string
	}
	first := map[string]line{} // each alloc's first line
	last := ""                 // the alloc of the previous line
	reported := map[[2]string]bool{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			rep.Malformed++
			continue
		}
		rep.Lines++
		alloc, stamp := fields[0], strings.Join(fields[1:], " ")
		if _, seen := first[alloc]; !seen {
			first[alloc] = line{n: n, stamp: stamp}
			rep.Writers = append(rep.Writers, alloc)
		} else if alloc != last && !reported[[2]string{alloc, last}] {
			reported[[2]string{alloc, last}] = true
			other := first[last]
			rep.Violations = append(rep.Violations, Violation{
				Check:    "writer-file",
				VolumeID: volumeID,
				Detail: fmt.Sprintf("alloc %s wrote line %d (%s) after alloc %s began at line %d (%s): two writers",
					alloc, n, stamp, last, other.n, other.stamp),
			})
		}
		last = alloc
	}
	if err := sc.Err(); err != nil {
		return rep, fmt.Errorf("check: read the writer file of volume %s: %w", volumeID, err)
	}
	return rep, nil
}
