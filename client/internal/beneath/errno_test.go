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
		t.Skip("openat2 is refused here, so EPERM rightly means unsupported") // the case the mapping is for
	}
	err := mapErrno(unix.EPERM)
	must.True(t, errors.Is(err, unix.EPERM))
	must.False(t, errors.Is(err, ErrUnsupported))
	must.ErrorIs(t, mapErrno(unix.ENOSYS), ErrUnsupported)
}
