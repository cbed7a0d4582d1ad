package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/berth-csi/berth/structs"
)

// Response headers.
const (
	headerIndex       = "X-Berth-Index"
	headerKnownLeader = "X-Berth-KnownLeader"
	headerLastContact = "X-Berth-LastContact"
	headerNextToken   = "X-Berth-NextToken"
)

// parseQueryOptions reads ?index=, ?wait=, ?stale, ?prefix= and ?namespace=.
// A bad value is a BadRequest naming the parameter.
func parseQueryOptions(r *http.Request, q *structs.QueryOptions) error {
	v := r.URL.Query()
	if s := v.Get("index"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return badRequest("query parameter index=%q must be a non-negative integer (a raft index from X-Berth-Index)", s)
		}
		q.MinQueryIndex = n
	}
	if s := v.Get("wait"); s != "" {
		d, err := parseWait(s)
		if err != nil {
			return badRequest("query parameter wait=%q %v", s, err)
		}
		q.MaxQueryTime = d
	}
	if v.Has("stale") {
		stale, err := parseFlag(v.Get("stale"))
		if err != nil {
			return badRequest("query parameter stale=%q must be empty, true or false", v.Get("stale"))
		}
		q.AllowStale = stale
	}
	q.Prefix = v.Get("prefix")
	q.Namespace = v.Get("namespace")
	return nil
}

// parseWait reads a duration ("30s", "5m"); a bare number is seconds.
func parseWait(s string) (time.Duration, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New(`must be a duration such as "30s" or "5m"`)
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return d, nil
}

// parseFlag reads a boolean parameter; present but empty means true.
func parseFlag(s string) (bool, error) {
	if s == "" {
		return true, nil
	}
	return strconv.ParseBool(s)
}

// flagParam reads a boolean query parameter of a write: absent is false,
// present but empty is true.
func flagParam(r *http.Request, name string) (bool, error) {
	q := r.URL.Query()
	if !q.Has(name) {
		return false, nil
	}
	v, err := parseFlag(q.Get(name))
	if err != nil {
		return false, badRequest("query parameter %s=%q must be true or false", name, q.Get(name))
	}
	return v, nil
}

// checkTypeCSI rejects ?type= other than csi (absent means csi).
func checkTypeCSI(r *http.Request) error {
	if t := r.URL.Query().Get("type"); t != "" && t != "csi" {
		return badRequest("query parameter type=%q is not supported; berth knows only type=csi", t)
	}
	return nil
}

// writeNamespace reads ?namespace= into a write request.
func writeNamespace(r *http.Request, w *structs.WriteRequest) {
	*w = structs.WriteRequest{Namespace: r.URL.Query().Get("namespace")}
}

// setQueryMeta writes the read headers.
func setQueryMeta(w http.ResponseWriter, m *structs.QueryMeta) {
	w.Header().Set(headerIndex, strconv.FormatUint(m.Index, 10))
	w.Header().Set(headerKnownLeader, strconv.FormatBool(m.KnownLeader))
	w.Header().Set(headerLastContact, strconv.FormatInt(m.LastContact.Milliseconds(), 10))
}

// setIndex writes the index header of a write or of a read without meta.
func setIndex(w http.ResponseWriter, index uint64) {
	w.Header().Set(headerIndex, strconv.FormatUint(index, 10))
}

// writeJSON writes v with status 200; ?pretty indents it. A list is
// streamed (writeJSONList); anything else is encoded before writing, so an
// encoding failure is still a clean 500. A client that went away is not an
// error worth reporting.
func writeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if wantsMsgpack(r) {
		return writeMsgpack(w, r, v)
	}
	pretty := r.URL.Query().Has("pretty")
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice {
		return writeJSONList(w, r, rv, pretty)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if pretty {
		enc.SetIndent("", "    ")
	}
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode answer to %s %s: %w", r.Method, r.URL.Path, err)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
	return nil
}

// nonNil makes a nil list an empty one, so that it answers as [] rather
// than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// bodyReadTimeout bounds how long a request body may take to arrive: a
// client that sends less than its Content-Length holds its connection
// no longer. A variable so that tests can shorten it.
var bodyReadTimeout = 30 * time.Second

// decodeBody reads a JSON request body into v. A field v does not have is
// refused, not dropped (a typo of "Count" must not register a job of
// none); so is anything but white space after the value. The body must
// arrive within bodyReadTimeout. Errors name what is wrong and where.
func decodeBody(r *http.Request, w http.ResponseWriter, what string, v any) error {
	// The deadline covers this body only: it is cleared after, so a
	// kept-alive connection's next request, or a blocking query, is not
	// cut short. An http.Server without deadlines (a test recorder) has
	// none to set.
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(bodyReadTimeout)) == nil
	err := readJSON(http.MaxBytesReader(w, r.Body, maxBodyBytes), what, v)
	if err != nil {
		// Close the body while the deadline holds: otherwise the server
		// would wait, with none, for the rest of a body that may never
		// come before it answers. A rest left unread closes the
		// connection.
		_ = r.Body.Close()
	}
	if deadline {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return err
}

func readJSON(body io.Reader, what string, v any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(what, v, err)
	}
	// Read to the end, so that a body shorter than its Content-Length
	// is caught here, under the deadline.
	if _, err := io.Copy(blankOnly{}, io.MultiReader(dec.Buffered(), body)); err != nil {
		if errors.Is(err, errNotBlank) {
			return badRequest("request body: want one JSON %s, found more data after it", what)
		}
		return bodyError(what, v, err)
	}
	return nil
}

var errNotBlank = errors.New("not white space")

// blankOnly takes JSON white space and refuses anything else.
type blankOnly struct{}

func (blankOnly) Write(p []byte) (int, error) {
	for i, c := range p {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i, errNotBlank
		}
	}
	return len(p), nil
}

// unknownFieldPrefix starts encoding/json's error for a field the target
// does not have; the field's quoted name follows.
const unknownFieldPrefix = "json: unknown field "

func bodyError(what string, v any, err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &timeoutError{msg: fmt.Sprintf("request body did not arrive within %s; send the whole body (as long as its Content-Length) at once", bodyReadTimeout)}
	case errors.Is(err, io.EOF):
		return badRequest("request body is empty; want a JSON %s", what)
	case errors.As(err, &mbe):
		return fmt.Errorf("request body is larger than %d MiB: %w", maxBodyBytes>>20, err)
	case errors.As(err, &syn):
		return badRequest("request body: malformed JSON at byte %d: %v", syn.Offset, err)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the body"
		}
		return badRequest("request body: field %s must be %s, not a JSON %s", field, typ.Type, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("request body: JSON %s ends early", what)
	case strings.HasPrefix(err.Error(), unknownFieldPrefix):
		name, uerr := strconv.Unquote(strings.TrimPrefix(err.Error(), unknownFieldPrefix))
		if uerr != nil {
			break
		}
		msg := fmt.Sprintf("request body: unknown field %s", structs.QuoteName(name))
		if s := suggestField(name, v); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		} else {
			msg += "; see docs/http-api.md for this route's fields"
		}
		return badRequest("%s", msg)
	}
	return badRequest("request body: %v", err)
}
