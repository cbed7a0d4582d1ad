package structs

import (
	"errors"
	"fmt"
)

// ErrorCode classifies an error for callers on the other side of an RPC or
// HTTP boundary. The strings are part of the wire format and the HTTP API:
// append only, never rename.
type ErrorCode string

const (
	CodeBadRequest       ErrorCode = "BadRequest"       // the request is malformed or invalid; HTTP 400
	CodePermissionDenied ErrorCode = "PermissionDenied" // HTTP 403
	CodeNotFound         ErrorCode = "NotFound"         // HTTP 404
	CodeConflict         ErrorCode = "Conflict"         // the state forbids it now (claimed, in use); HTTP 409
	CodeInternal         ErrorCode = "Internal"         // HTTP 500
	// CodeUnavailable: a passing fault (no leader, a server shutting
	// down, a peer that cannot be reached) stopped the request before it
	// took effect: nothing was applied, and any request may be sent again.
	// HTTP 503.
	CodeUnavailable ErrorCode = "Unavailable"
	// CodeNotReady: the server answered, but what the request needs (a
	// node, a plugin instance) is not ready yet; retry the same server.
	// HTTP 503. Unlike Unavailable it never moves a client off a server.
	CodeNotReady ErrorCode = "NotReady"
	// CodeIndeterminate: the request reached the cluster but its answer
	// was lost (leadership changed, or the connection broke after it was
	// sent): a write may or may not have been applied. Read the object
	// before sending the write again. HTTP 503. It is a kind of
	// Unavailable: errors.Is(err, ErrUnavailable) holds for it, and
	// NotApplied does not.
	CodeIndeterminate ErrorCode = "Indeterminate"
	// CodeGone: what the request asks for is no longer kept, and asking
	// again will not bring it back: an event stream resumed from an index
	// older than the events a server still holds. Re-read the objects and
	// start again from their index. HTTP 410.
	CodeGone ErrorCode = "Gone"
)

// Error is berth's coded error. Its Message names the object concerned and
// what to do; Code lets a caller decide without matching strings.
type Error struct {
	Code    ErrorCode
	Message string
}

func (e *Error) Error() string { return e.Message }

// Is makes errors.Is(err, ErrNotFound) true for any *Error with the same
// code, whatever its message. An Indeterminate error also matches
// ErrUnavailable: it is a kind of unavailability, and code that retries
// Unavailable (on another server, say) treats both alike.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Code == e.Code || (t.Code == CodeUnavailable && e.Code == CodeIndeterminate)
}

// Sentinels for errors.Is; each matches every Error of its code.
var (
	ErrBadRequest       = &Error{Code: CodeBadRequest, Message: "bad request"}
	ErrPermissionDenied = &Error{Code: CodePermissionDenied, Message: "permission denied"}
	ErrNotFound         = &Error{Code: CodeNotFound, Message: "not found"}
	ErrConflict         = &Error{Code: CodeConflict, Message: "conflict"}
	ErrInternal         = &Error{Code: CodeInternal, Message: "internal error"}
	ErrUnavailable      = &Error{Code: CodeUnavailable, Message: "unavailable"}
	ErrNotReady         = &Error{Code: CodeNotReady, Message: "not ready yet"}
	ErrIndeterminate    = &Error{Code: CodeIndeterminate, Message: "the answer was lost; the request may have been applied"}
	ErrGone             = &Error{Code: CodeGone, Message: "no longer kept"}
)

// NotApplied reports whether err says the request was not applied and may
// be sent again as it is, whatever it does: Unavailable or NotReady, and
// not Indeterminate anywhere in its chain. It is false for nil and for
// every other error, whose request may have taken effect or would fail
// the same way again.
func NotApplied(err error) bool {
	if err == nil || errors.Is(err, ErrIndeterminate) {
		return false
	}
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotReady)
}

// NewError builds a coded error with a formatted message.
func NewError(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCodeOf finds the code of err: the code of the first *Error in its
// chain, CodeInternal for any other non-nil error, "" for nil.
func ErrorCodeOf(err error) ErrorCode {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ToError flattens err into one *Error carrying the code found in its chain
// and the whole wrapped message, ready to cross a wire. nil stays nil.
func ToError(err error) *Error {
	if err == nil {
		return nil
	}
	return &Error{Code: ErrorCodeOf(err), Message: err.Error()}
}

// KnownErrorCode reports whether c is a code this version defines.
func KnownErrorCode(c ErrorCode) bool {
	switch c {
	case CodeBadRequest, CodePermissionDenied, CodeNotFound, CodeConflict, CodeInternal, CodeUnavailable, CodeNotReady,
		CodeIndeterminate, CodeGone:
		return true
	}
	return false
}
