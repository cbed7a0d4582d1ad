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
// what to do; Code is the structs.ErrorCode the server sent.
type Error struct {
	StatusCode int
	Code       string
	Message    string
}

func (e *Error) Error() string { return e.Message }

// Is makes errors.Is(err, structs.ErrNotFound) true for an answer coded
// NotFound, and likewise for every structs sentinel. Two *Error values
// match when their codes do.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case *structs.Error:
		return t.Code == structs.ErrorCode(e.Code)
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
// It matches structs.ErrUnavailable.
type UnreachableError struct {
	Address string
	Err     error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach berth at %s: %v; is an agent running there?", e.Address, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, structs.ErrUnavailable) true: a caller may retry.
func (e *UnreachableError) Is(target error) bool {
	t, ok := target.(*structs.Error)
	return ok && t.Code == structs.CodeUnavailable
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
		e.Code = string(codeForStatus(resp.StatusCode))
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
