package csi

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/shoenig/test/must"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestIsFinal_Codes(t *testing.T) {
	cases := []struct {
		code  Code
		final bool
	}{
		{CodeCanceled, false},
		{CodeDeadlineExceeded, false},
		{CodeUnavailable, false},
		{CodeResourceExhausted, false},
		{CodeAborted, false},
		{CodeUnknown, true},
		{CodeInvalidArgument, true},
		{CodeNotFound, true},
		{CodeAlreadyExists, true},
		{CodePermissionDenied, true},
		{CodeFailedPrecondition, true},
		{CodeOutOfRange, true},
		{CodeUnimplemented, true},
		{CodeInternal, true},
		{CodeDataLoss, true},
		{CodeUnauthenticated, true},
	}
	for _, tc := range cases {
		t.Run(tc.code.String(), func(t *testing.T) {
			raw := status.Error(codes.Code(tc.code), "boom")
			must.Eq(t, tc.final, IsFinal(raw))
			wrapped := wrapError("p", "Call", raw)
			must.Eq(t, tc.final, IsFinal(wrapped))
			must.Eq(t, tc.final, IsFinal(fmt.Errorf("outer: %w", wrapped)))
			must.Eq(t, tc.code, CodeOf(wrapped))
		})
	}
}

func TestIsFinal_NonGRPC(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		final bool
	}{
		{"nil", nil, false},
		{"plain error", errors.New("dial unix: refused"), false},
		{"context canceled", context.Canceled, false},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), false},
		{"no socket", wrapError("p", "dial", fmt.Errorf("%w: x", ErrNoSocket)), false},
		{"invalid path", wrapError("p", "dial", fmt.Errorf("%w: x", ErrInvalidPath)), true},
		{"closed", wrapError("p", "Probe", ErrClosed), true},
		{"invalid request", wrapError("p", "CreateVolume", fmt.Errorf("%w: x", ErrInvalidRequest)), true},
		{"invalid response", wrapError("p", "CreateVolume", fmt.Errorf("%w: x", ErrInvalidResponse)), true},
		{"capability mismatch", wrapError("p", "ValidateVolumeCapabilities", fmt.Errorf("%w: x", ErrCapabilityMismatch)), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.final, IsFinal(tc.err))
		})
	}
}

func TestError_Format(t *testing.T) {
	err := wrapError("hostpath", "Probe", status.Error(codes.Unavailable, "connection refused"))
	must.EqError(t, err, `plugin "hostpath": Probe: Unavailable: connection refused`)
	// Wrapping twice keeps the first classification.
	must.Eq(t, err, wrapError("other", "Other", err))

	err = wrapError("hostpath", "dial", fmt.Errorf("%w: /x does not exist", ErrNoSocket))
	must.EqError(t, err, `plugin "hostpath": dial: csi: no socket at the plugin's path: /x does not exist`)
	must.ErrorIs(t, err, ErrNoSocket)
	must.Eq(t, CodeUnknown, CodeOf(err))
	must.Eq(t, CodeOK, CodeOf(nil))
	must.Nil(t, wrapError("p", "c", nil))
}
