package csi

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinels, for errors.Is.
var (
	ErrNoSocket    = errors.New("csi: no socket at the plugin's path")
	ErrNotSocket   = errors.New("csi: the plugin's path is not a unix socket")
	ErrClosed      = errors.New("csi: client closed")
	ErrInvalidPath = errors.New("csi: socket path must be absolute")
	// ErrInvalidRequest: berth refused to send a request the spec or
	// the plugin's answer could never accept; no call was made.
	ErrInvalidRequest = errors.New("csi: invalid request")
	// ErrInvalidResponse: the plugin answered OK with a response the
	// spec forbids (a created volume without an ID).
	ErrInvalidResponse = errors.New("csi: the plugin's response breaks the CSI spec")
	// ErrCapabilityMismatch: ValidateVolumeCapabilities confirmed
	// capabilities other than those asked for.
	ErrCapabilityMismatch = errors.New("csi: confirmed capabilities differ from those requested")
)

// Code is a canonical gRPC status code, as CSI plugins answer them. The
// numbers are gRPC's and never change.
type Code uint32

const (
	CodeOK                 Code = 0
	CodeCanceled           Code = 1
	CodeUnknown            Code = 2
	CodeInvalidArgument    Code = 3
	CodeDeadlineExceeded   Code = 4
	CodeNotFound           Code = 5
	CodeAlreadyExists      Code = 6
	CodePermissionDenied   Code = 7
	CodeResourceExhausted  Code = 8
	CodeFailedPrecondition Code = 9
	CodeAborted            Code = 10
	CodeOutOfRange         Code = 11
	CodeUnimplemented      Code = 12
	CodeInternal           Code = 13
	CodeUnavailable        Code = 14
	CodeDataLoss           Code = 15
	CodeUnauthenticated    Code = 16
)

func (c Code) String() string { return codes.Code(c).String() }

// Error is a failed call to a plugin: which plugin, which call, what the
// plugin (or the transport) said. Code is meaningful only when GRPC is
// true; other errors (the socket is missing, the context ended before the
// call was sent) have GRPC false.
type Error struct {
	Plugin  string // berth's plugin ID
	Call    string // the CSI RPC, e.g. "Probe", or "dial"
	Code    Code
	GRPC    bool
	Message string
	err     error
}

func (e *Error) Error() string {
	if e.GRPC {
		return fmt.Sprintf("plugin %q: %s: %s: %s", e.Plugin, e.Call, e.Code, e.Message)
	}
	return fmt.Sprintf("plugin %q: %s: %s", e.Plugin, e.Call, e.Message)
}

func (e *Error) Unwrap() error { return e.err }

// wrapError classifies err from call once: a gRPC status becomes a coded
// *Error; anything else is kept, unclassified, for errors.Is.
func wrapError(plugin, call string, err error) error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	if s, ok := status.FromError(err); ok {
		return &Error{Plugin: plugin, Call: call, Code: Code(s.Code()), GRPC: true, Message: s.Message(), err: err}
	}
	return &Error{Plugin: plugin, Call: call, Message: err.Error(), err: err}
}

// CodeOf returns the gRPC code of a failed call, CodeOK for nil, and
// CodeUnknown for an error that carries no gRPC code.
func CodeOf(err error) Code {
	if err == nil {
		return CodeOK
	}
	var ce *Error
	if errors.As(err, &ce) && ce.GRPC {
		return ce.Code
	}
	if s, ok := status.FromError(err); ok {
		return Code(s.Code())
	}
	return CodeUnknown
}

// IsFinal reports whether err means the operation definitely did not
// happen or definitely failed, so that retrying it unchanged is pointless.
// Canceled, DeadlineExceeded, Unavailable, ResourceExhausted and Aborted
// mean it may still be in progress (retry it, or issue its negation), as
// do errors that are not gRPC statuses (a dial failure, a context that
// ended before the call was answered). This is external-attacher's
// isFinalError. An invalid socket path, a closed client and an invalid
// request are final: no call was made, and retrying cannot change that. So
// are an answer that breaks the spec and a capability mismatch: the plugin
// would give the same answer again. nil is not final.
func IsFinal(err error) bool {
	if err == nil {
		return false
	}
	for _, final := range []error{ErrInvalidPath, ErrClosed, ErrInvalidRequest, ErrInvalidResponse, ErrCapabilityMismatch} {
		if errors.Is(err, final) {
			return true // no call was or will be made, or its answer will not change
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ce *Error
	if errors.As(err, &ce) {
		if !ce.GRPC {
			return false
		}
		return isFinalCode(ce.Code)
	}
	if s, ok := status.FromError(err); ok {
		return isFinalCode(Code(s.Code()))
	}
	return false
}

func isFinalCode(c Code) bool {
	switch c {
	case CodeCanceled, CodeDeadlineExceeded, CodeUnavailable, CodeResourceExhausted, CodeAborted:
		return false
	}
	return true
}
