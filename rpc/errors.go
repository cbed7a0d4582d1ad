package rpc

import (
	"context"
	"errors"

	"github.com/berth-csi/berth/structs"
)

// Sentinels for failures that do not cross the wire as coded errors.
var (
	ErrBadService         = errors.New("rpc: bad service")
	errFrameTooLarge      = errors.New("rpc: frame too large")
	errMalformedHeader    = errors.New("rpc: malformed frame header")
	errFrameTimeout       = errors.New("rpc: request too slow")
	errFrameStalled       = errors.New("rpc: request stalled")
	errFrameBudget        = errors.New("rpc: no room for the request in the frame budget")
	errTooManyConns       = errors.New("rpc: too many connections")
	errTooManyConnsFromIP = errors.New("rpc: too many connections from one address")
	errReservedConns      = errors.New("rpc: general connection places all taken; the rest are reserved")
	errSeqMismatch        = errors.New("rpc: response does not match request")
	errPoolShutdown       = errors.New("rpc: pool shut down")
)

// wireError splits a method's error into the response header fields that
// carry it across the wire: the code found in its chain and its message.
func wireError(err error) (msg, code string) {
	e := structs.ToError(err)
	return e.Message, string(e.Code)
}

// remoteError rebuilds the coded error a response header carries, nil when
// it carries none. A response with a message and no code is CodeInternal; a
// code this version does not know is kept as sent, so errors.Is matches no
// sentinel and the HTTP layer treats it as internal.
func remoteError(h *header) error {
	if h.Error == "" && h.Code == "" {
		return nil
	}
	code := structs.ErrorCode(h.Code)
	if code == "" {
		code = structs.CodeInternal
	}
	msg := h.Error
	if msg == "" {
		msg = "rpc: " + h.ServiceMethod + ": " + string(code)
	}
	return &structs.Error{Code: code, Message: msg}
}

// unavailable is the error of a call whose request was never sent: the
// peer could not be reached, the session was gone, or ctx ended first.
// Nothing ran, so any call may be retried. It names the method and the
// peer so the log line says what failed where.
func unavailable(method, peer string, cause error) *structs.Error {
	return structs.NewError(structs.CodeUnavailable, "rpc: call %s to %s: %v", method, peer, cause)
}

// indeterminate is the error of a call whose request was sent but whose
// answer never came: the session broke, or ctx ended, while the method may
// have been running. A write may or may not have been applied.
func indeterminate(method, peer string, cause error) *structs.Error {
	return structs.NewError(structs.CodeIndeterminate,
		"rpc: call %s to %s: no answer after the request was sent: %v; it may have been applied", method, peer, cause)
}

// methodError codes the error a method returned. A context error passed
// through uncoded means the call was cut short while the method ran (the
// caller hung up, its deadline passed, the server is shutting down):
// Indeterminate, since the method may have done its work before it
// noticed. Other errors keep their code; uncoded ones become Internal on
// the wire.
func methodError(method string, err error) error {
	var e *structs.Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return structs.NewError(structs.CodeIndeterminate, "rpc: %s cut short: %v; it may have been applied", method, err)
	}
	return err
}
