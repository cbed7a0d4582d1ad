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
	CodeUnavailable      ErrorCode = "Unavailable"      // no leader, shutting down; retry; HTTP 503
	// CodeNotReady: the server answered, but what the request needs (a
	// node, a plugin instance) is not ready yet; retry the same server.
	// HTTP 503. Unlike Unavailable it never moves a client off a server.
	CodeNotReady ErrorCode = "NotReady"
)

// Error is berth's coded error. Its Message names the object concerned and
// what to do; Code lets a caller decide without matching strings.
type Error struct {
	Code    ErrorCode
	Message string
}

func (e *Error) Error() string { return e.Message }

// Is makes errors.Is(err, ErrNotFound) true for any *Error with the same
// code, whatever its message.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Code == e.Code
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
)

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
	case CodeBadRequest, CodePermissionDenied, CodeNotFound, CodeConflict, CodeInternal, CodeUnavailable, CodeNotReady:
		return true
	}
	return false
}
