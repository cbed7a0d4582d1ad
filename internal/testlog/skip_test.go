package testlog

import (
	"fmt"
	"testing"

	"github.com/shoenig/test/must"
)

// tb records how a test ended, without ending this one.
type tb struct {
	testing.TB
	skipped, failed string
}

func (t *tb) Helper()                        {}
func (t *tb) Skip(args ...any)               { t.skipped = fmt.Sprint(args...) }
func (t *tb) Fatalf(format string, a ...any) { t.failed = fmt.Sprintf(format, a...) }

// TestSkip: a skip is a skip, but under BERTH_TEST_STRICT a failure that
// says why.
func TestSkip(t *testing.T) {
	t.Setenv(StrictEnv, "")
	r := &tb{}
	Skip(r, "no chromium")
	must.EqOp(t, "no chromium", r.skipped)
	must.EqOp(t, "", r.failed)

	t.Setenv(StrictEnv, "1")
	r = &tb{}
	Skip(r, "no chromium")
	must.EqOp(t, "BERTH_TEST_STRICT set: cannot skip: no chromium", r.failed)
}
