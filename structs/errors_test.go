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
