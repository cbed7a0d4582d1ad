package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shoenig/test/must"
)

// item encodes as its name, or fails when bad.
type item struct {
	Name string
	bad  bool
}

func (i item) MarshalJSON() ([]byte, error) {
	if i.bad {
		return nil, errors.New("cannot encode")
	}
	return json.Marshal(i.Name)
}

func serveList(t *testing.T, list []item) (*http.Response, []byte, error) {
	return serveListAt(t, list, "/v1/things")
}

func serveListAt(t *testing.T, list []item, path string) (*http.Response, []byte, error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := writeJSON(w, r, list); err != nil {
			writeError(w, err)
		}
	}))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + path)
	must.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// TestWriteJSONList: a streamed list reads as the array json.Marshal
// makes; an element that cannot be encoded is a clean 500 when it comes
// first, and a cut connection (never a short list that looks whole) later.
func TestWriteJSONList(t *testing.T) {
	for _, list := range [][]item{{}, {{Name: "a"}}, {{Name: "a"}, {Name: "b"}, {Name: "c"}}} {
		resp, body, err := serveList(t, list)
		must.NoError(t, err)
		must.EqOp(t, http.StatusOK, resp.StatusCode)
		must.EqOp(t, "application/json", resp.Header.Get("Content-Type"))
		want, err := json.Marshal(list)
		must.NoError(t, err)
		must.EqOp(t, string(want)+"\n", string(body))
	}

	for i, short := range [][]item{{{bad: true}, {Name: "b"}}, {{Name: "a"}, {bad: true}}} {
		resp, body, err := serveList(t, short)
		must.NoError(t, err, must.Sprintf("list %d: nothing was sent yet: a clean answer", i))
		must.EqOp(t, http.StatusInternalServerError, resp.StatusCode, must.Sprint(string(body)))
		must.StrContains(t, string(body), fmt.Sprintf("element %d", i))
	}

	for _, list := range [][]item{nil, {}, {{Name: "a"}}, {{Name: "a"}, {Name: "b"}}} {
		_, body, err := serveListAt(t, list, "/v1/things?pretty")
		must.NoError(t, err)
		want := "[]"
		if len(list) > 0 {
			b, err := json.MarshalIndent(list, "", "    ")
			must.NoError(t, err)
			want = string(b)
		}
		must.EqOp(t, want+"\n", string(body), must.Sprint("?pretty streams as MarshalIndent indents"))
	}

	long := make([]item, 20000) // past the first chunk, so the headers are out
	for i := range long {
		long[i].Name = "volume-with-a-long-enough-name"
	}
	long[len(long)-1].bad = true
	_, body, err := serveList(t, long)
	must.Error(t, err, must.Sprint("the caller must see the answer broken"))
	must.False(t, json.Valid(body))
}
