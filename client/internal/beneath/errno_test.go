package beneath

import (
	"errors"
	"testing"

	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"
)

// Where openat2 answers, an EPERM is the kernel's own (an immutable file,
// say) and is passed on, not taken for a seccomp filter that lacks
// openat2; ENOSYS is always "unsupported".
func TestMapErrno_EPERMPassedOnWhereOpenat2Works(t *testing.T) {
	if !openat2Works() {
		// The package's own opens prove openat2 answers wherever its tests
		// run; a probe that says otherwise is wrong.
		root, err := Open(t.TempDir())
		must.NoError(t, err)
		defer root.Close()
		must.ErrorIs(t, root.MkdirAll("a", 0o755), ErrUnsupported, must.Sprint("the probe says openat2 is refused, but it answered"))
		return
	}
	err := mapErrno(unix.EPERM)
	must.True(t, errors.Is(err, unix.EPERM))
	must.False(t, errors.Is(err, ErrUnsupported))
	must.ErrorIs(t, mapErrno(unix.ENOSYS), ErrUnsupported)
}
