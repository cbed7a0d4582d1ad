package check

import "fmt"

// A Violation is one broken promise found by a checker.
type Violation struct {
	Check    string // the checker that found it: "single-writer", "writer-file", ...
	VolumeID string // the volume concerned, when there is one
	Detail   string // what was seen, with times and IDs
}

// String renders v for the run's report.
func (v Violation) String() string {
	if v.VolumeID == "" {
		return fmt.Sprintf("%s: %s", v.Check, v.Detail)
	}
	return fmt.Sprintf("%s: volume %s: %s", v.Check, v.VolumeID, v.Detail)
}
