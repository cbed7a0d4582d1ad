package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/berth-csi/berth/structs"
)

// Error is an error answer of the HTTP API. Message names the object and
// what to do; Code is the structs.ErrorCode the server sent, or one
// guessed from StatusCode when the answer carried none (a proxy's).
//
// A 503 answer is Unavailable, NotReady or Indeterminate. Unavailable and
// NotReady say the request was not applied: send it again
// (structs.NotApplied). Indeterminate says the cluster got the request
// but lost its answer: a write may or may not have been applied, so read
// before sending it again. Indeterminate also matches
// structs.ErrUnavailable.
type Error struct {
	StatusCode int
	Code       string
	Message    string

	guessed bool // Code was guessed from StatusCode
}

func (e *Error) Error() string { return e.Message }

// Is makes errors.Is(err, structs.ErrNotFound) true for an answer coded
// NotFound, and likewise for every structs sentinel, as structs.Error.Is
// does (an Indeterminate answer matches ErrUnavailable too). Two *Error
// values match when their codes do.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case *structs.Error:
		return (&structs.Error{Code: structs.ErrorCode(e.Code)}).Is(t)
	case *Error:
		return t.Code == e.Code
	}
	return false
}

// Unwrap returns the coded structs.Error the answer carried, so that
// errors.As(err, &*structs.Error) finds it.
func (e *Error) Unwrap() error {
	return &structs.Error{Code: structs.ErrorCode(e.Code), Message: e.Message}
}

// UnreachableError is returned when no answer came back from the address:
// nothing listens there, the connection broke, the name does not resolve.
// It matches structs.ErrUnavailable; and structs.ErrIndeterminate too
// unless it failed before any of the request was written (the dial or the
// TLS handshake failed), since a request that went out may have been
// applied.
type UnreachableError struct {
	Address string
	Err     error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach berth at %s: %v; is an agent running there?", e.Address, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, structs.ErrUnavailable) true, and
// errors.Is(err, structs.ErrIndeterminate) when the request may have been
// sent.
func (e *UnreachableError) Is(target error) bool {
	t, ok := target.(*structs.Error)
	if !ok {
		return false
	}
	switch t.Code {
	case structs.CodeUnavailable:
		return true
	case structs.CodeIndeterminate:
		return !notSent(e.Err)
	}
	return false
}

// codeForStatus guesses the code of an answer that carried none (a proxy's
// error page, say).
func codeForStatus(status int) structs.ErrorCode {
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed:
		return structs.CodeBadRequest
	case http.StatusForbidden, http.StatusUnauthorized:
		return structs.CodePermissionDenied
	case http.StatusNotFound:
		return structs.CodeNotFound
	case http.StatusConflict:
		return structs.CodeConflict
	case http.StatusGone:
		return structs.CodeGone
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return structs.CodeUnavailable
	}
	return structs.CodeInternal
}

func errorFromResponse(resp *http.Response) *Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &Error{StatusCode: resp.StatusCode}
	var wire struct{ Code, Message string }
	if json.Unmarshal(body, &wire) == nil && wire.Message != "" {
		e.Code, e.Message = wire.Code, wire.Message
	}
	if e.Code == "" {
		e.Code, e.guessed = string(codeForStatus(resp.StatusCode)), true
	}
	if e.Message == "" {
		msg := strings.TrimSpace(string(body))
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		e.Message = fmt.Sprintf("%s %s: %d %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, msg)
	}
	return e
}
