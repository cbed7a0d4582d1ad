package testlog

import (
	"os"
	"testing"
)

// StrictEnv, set to anything but "" or "0", makes a test that would skip
// for a missing tool or privilege fail instead: CI sets it where the
// machine has them all, so that no check goes missing unseen.
const StrictEnv = "BERTH_TEST_STRICT"

// Strict reports whether StrictEnv is set: a check that would be left
// out for a missing tool must fail instead.
func Strict() bool {
	v := os.Getenv(StrictEnv)
	return v != "" && v != "0"
}

// Skip skips the test saying why, or, under StrictEnv, fails it.
func Skip(t testing.TB, why string) {
	t.Helper()
	if Strict() {
		t.Fatalf("%s set: cannot skip: %s", StrictEnv, why)
	}
	t.Skip(why)
}

// NeedRoot skips (or under StrictEnv fails) a test that needs root.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "needs root: "+why)
	}
}
