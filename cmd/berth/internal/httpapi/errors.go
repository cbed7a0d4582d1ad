package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/berth-csi/berth/structs"
)

// statusOf is the one table from error codes to HTTP status.
var statusOf = map[structs.ErrorCode]int{
	structs.CodeBadRequest:       http.StatusBadRequest,
	structs.CodePermissionDenied: http.StatusForbidden,
	structs.CodeNotFound:         http.StatusNotFound,
	structs.CodeConflict:         http.StatusConflict,
	structs.CodeInternal:         http.StatusInternalServerError,
	structs.CodeUnavailable:      http.StatusServiceUnavailable,
	structs.CodeNotReady:         http.StatusServiceUnavailable,
	// Indeterminate is a 503 too: its Code tells the caller that the
	// write may have been applied, where Unavailable says it was not.
	structs.CodeIndeterminate: http.StatusServiceUnavailable,
	structs.CodeGone:          http.StatusGone,
}

// httpStatus maps err's code to a status; unknown codes are 500.
func httpStatus(err error) int {
	if s, ok := statusOf[structs.ErrorCodeOf(err)]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Code    structs.ErrorCode
	Message string
}

// writeError writes err as {"Code", "Message"} and returns the status.
func writeError(w http.ResponseWriter, err error) int {
	status := httpStatus(err)
	code := structs.ErrorCodeOf(err)
	var mbe *http.MaxBytesError
	var me *methodError
	var te *timeoutError
	switch {
	case errors.As(err, &mbe):
		status, code = http.StatusRequestEntityTooLarge, structs.CodeBadRequest
	case errors.As(err, &me):
		status, code = http.StatusMethodNotAllowed, structs.CodeBadRequest
	case errors.As(err, &te):
		status, code = http.StatusRequestTimeout, structs.CodeBadRequest
	}
	if !structs.KnownErrorCode(code) {
		code = structs.CodeInternal
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Code: code, Message: err.Error()})
	return status
}

func badRequest(format string, args ...any) error {
	return structs.NewError(structs.CodeBadRequest, format, args...)
}

func notFound(format string, args ...any) error {
	return structs.NewError(structs.CodeNotFound, format, args...)
}

func errNotFoundRoute(r *http.Request) error {
	return notFound("no such API route: %s %s; see the HTTP API routes under /v1/", r.Method, r.URL.Path)
}

func errMethod(r *http.Request, allow string) error {
	return &methodError{msg: fmt.Sprintf("method %s is not allowed on %s; use %s", r.Method, r.URL.Path, allow)}
}

// methodError is a 405; it is not a structs code because no RPC makes one.
type methodError struct{ msg string }

func (e *methodError) Error() string { return e.msg }

// timeoutError is a 408: the request body did not arrive in time. Like
// methodError it is the HTTP layer's own, made by no RPC.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string { return e.msg }

func allowHeader(rt route) string {
	methods := make([]string, 0, len(rt))
	for m := range rt {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	return strings.Join(methods, ", ")
}
