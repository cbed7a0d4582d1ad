package spec

import (
	"errors"
	"fmt"
	"sort"
)

// Error is one problem in a spec file, at a line, in a field.
type Error struct {
	File  string
	Line  int
	Field string // dotted path such as "capability.access_mode"; empty for syntax errors and a config's errors
	Msg   string // names the field itself, so Error() reads on its own
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// maxErrors bounds how many problems one parse reports.
const maxErrors = 20

// joinErrors sorts the problems by line and returns nil, the one error or
// all of them joined (one per line; errors.As finds the first).
func joinErrors(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	if len(errs) == 1 {
		return errs[0]
	}
	if len(errs) > maxErrors {
		errs = errs[:maxErrors]
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}
