package structs

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shoenig/test/must"
)

func TestError_IsByCode(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", NewError(CodeConflict, "volume %q is claimed", "data"))
	must.ErrorIs(t, err, ErrConflict)
	must.False(t, errors.Is(err, ErrNotFound))
	must.Eq(t, CodeConflict, ErrorCodeOf(err))
	must.Eq(t, CodeInternal, ErrorCodeOf(errors.New("plain")))
	must.Eq(t, ErrorCode(""), ErrorCodeOf(nil))

	flat := ToError(err)
	must.Eq(t, CodeConflict, flat.Code)
	must.Eq(t, `wrapped: volume "data" is claimed`, flat.Message)
	must.Nil(t, ToError(nil))
}

// TestError_Indeterminate: an Indeterminate error is a kind of Unavailable
// for errors.Is, never the other way round, and only Unavailable and
// NotReady say the request was not applied.
func TestError_Indeterminate(t *testing.T) {
	lost := fmt.Errorf("forward: %w", NewError(CodeIndeterminate, "Volume.Register: leadership lost while committing log"))
	must.ErrorIs(t, lost, ErrIndeterminate)
	must.ErrorIs(t, lost, ErrUnavailable)
	must.False(t, errors.Is(lost, ErrNotReady))
	must.False(t, errors.Is(NewError(CodeUnavailable, "no leader"), ErrIndeterminate))
	must.False(t, errors.Is(ErrUnavailable, ErrIndeterminate))
	must.Eq(t, CodeIndeterminate, ToError(lost).Code)
	must.True(t, KnownErrorCode(CodeIndeterminate))
	must.False(t, KnownErrorCode("Unheard"))

	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"unavailable", NewError(CodeUnavailable, "no cluster leader"), true},
		{"wrapped unavailable", fmt.Errorf("claim: %w", NewError(CodeUnavailable, "no cluster leader")), true},
		{"not ready", NewError(CodeNotReady, "node n1 is down"), true},
		{"indeterminate", lost, false},
		{"unavailable wrapping indeterminate", fmt.Errorf("%w: %w", ErrUnavailable, lost), false},
		{"conflict", NewError(CodeConflict, "claimed"), false},
		{"uncoded", errors.New("disk full"), false},
		{"nil", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.EqOp(t, tc.want, NotApplied(tc.err))
		})
	}
}

func TestDecode_Malformed(t *testing.T) {
	var out CSIVolumeRegisterRequest
	for _, buf := range [][]byte{{0xc1}, {0x82, 0xa4}, {0xdd, 0xff, 0xff, 0xff, 0xff}} {
		must.Error(t, Decode(buf, &out))
	}
}

func TestMessageType_String(t *testing.T) {
	must.Eq(t, "CSIVolumeClaim", CSIVolumeClaimRequestType.String())
	must.Eq(t, "MessageType(250)", MessageType(250).String())
}
