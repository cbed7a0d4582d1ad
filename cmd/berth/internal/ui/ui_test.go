package ui

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/shoenig/test/must"
)

// embedded lists every file under static/ with its bytes.
func embedded(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := fs.WalkDir(static, "static", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, name)
		files[strings.TrimPrefix(name, "static/")] = b
		return err
	})
	must.NoError(t, err)
	must.MapContainsKeys(t, files, []string{"index.html", "style.css", "favicon.svg", "js/app.js"})
	return files
}

// serve sends one request through Mount in front of an API stand-in
// that answers "api".
func serve(t *testing.T, method, target string, hdr http.Header) *http.Response {
	t.Helper()
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `"api"`)
	})
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	Mount(api).ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return string(b)
}

func TestHandler_ServesEveryEmbeddedFileWithItsType(t *testing.T) {
	want := map[string]string{
		".html": "text/html; charset=utf-8",
		".css":  "text/css; charset=utf-8",
		".js":   "text/javascript; charset=utf-8",
		".svg":  "image/svg+xml",
	}
	for name, data := range embedded(t) {
		t.Run(name, func(t *testing.T) {
			ext := name[strings.LastIndex(name, "."):]
			ctype, ok := want[ext]
			must.True(t, ok, must.Sprintf("embedded file %s has an extension the test does not know; add its type", name))
			resp := serve(t, http.MethodGet, Prefix+name, nil)
			must.EqOp(t, http.StatusOK, resp.StatusCode)
			must.EqOp(t, ctype, resp.Header.Get("Content-Type"))
			must.EqOp(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			must.StrContains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'")
			must.EqOp(t, string(data), body(t, resp))
		})
	}
}

func TestHandler_ClientRoutesServeIndex(t *testing.T) {
	index := string(embedded(t)["index.html"])
	for _, path := range []string{
		"/ui/",
		"/ui/volumes/data",
		"/ui/anything/at/all?x=1",
		"/ui/js/",           // a directory: never listed
		"/ui/js/missing.js", // no such file
	} {
		t.Run(path, func(t *testing.T) {
			resp := serve(t, http.MethodGet, path, nil)
			must.EqOp(t, http.StatusOK, resp.StatusCode)
			must.EqOp(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
			must.EqOp(t, index, body(t, resp))
		})
	}
}

func TestHandler_NothingOutsideTheEmbedIsServed(t *testing.T) {
	index := string(embedded(t)["index.html"])
	for _, path := range []string{
		"/ui/ui.go",                // this package's source, next to static/
		"/ui/doc.go",               //
		"/ui/../ui.go",             // unclean paths reach the handler as sent
		"/ui/../../../../go.mod",   //
		"/ui/%2e%2e/ui.go",         // escaped dots
		"/ui/static/index.html",    // the embed's own directory name is not a path
		"/ui//etc/passwd",          //
		"/ui/..%2f..%2fgo.mod",     //
		"/ui/js/../../ui_test.go",  //
		"/ui/js/%2e%2e/ui_test.go", //
	} {
		t.Run(path, func(t *testing.T) {
			resp := serve(t, http.MethodGet, path, nil)
			must.EqOp(t, http.StatusOK, resp.StatusCode)
			must.EqOp(t, index, body(t, resp))
		})
	}
}

func TestMount_RedirectsRootAndPassesTheAPI(t *testing.T) {
	cases := []struct {
		method, path string
		status       int
		location     string
		body         string
	}{
		{http.MethodGet, "/", http.StatusFound, "/ui/", ""},
		{http.MethodHead, "/", http.StatusFound, "/ui/", ""},
		{http.MethodGet, "/ui", http.StatusFound, "/ui/", ""},
		{http.MethodPost, "/", http.StatusOK, "", `"api"`},
		{http.MethodGet, "/v1/nodes", http.StatusOK, "", `"api"`},
		{http.MethodGet, "/v1/ui/", http.StatusOK, "", `"api"`},
		{http.MethodGet, "/uix", http.StatusOK, "", `"api"`},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp := serve(t, tc.method, tc.path, nil)
			must.EqOp(t, tc.status, resp.StatusCode)
			must.EqOp(t, tc.location, resp.Header.Get("Location"))
			if tc.body != "" {
				must.EqOp(t, tc.body, body(t, resp))
			}
		})
	}
}

func TestHandler_OnlyReads(t *testing.T) {
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		t.Run(m, func(t *testing.T) {
			resp := serve(t, m, "/ui/index.html", nil)
			must.EqOp(t, http.StatusMethodNotAllowed, resp.StatusCode)
			must.EqOp(t, "GET, HEAD", resp.Header.Get("Allow"))
		})
	}
}

func TestHandler_RevalidatesByETag(t *testing.T) {
	first := serve(t, http.MethodGet, "/ui/style.css", nil)
	etag := first.Header.Get("ETag")
	must.NotEq(t, "", etag)
	must.EqOp(t, "no-cache", first.Header.Get("Cache-Control"))
	again := serve(t, http.MethodGet, "/ui/style.css", http.Header{"If-None-Match": {etag}})
	must.EqOp(t, http.StatusNotModified, again.StatusCode)
	other := serve(t, http.MethodGet, "/ui/js/app.js", nil)
	must.NotEq(t, etag, other.Header.Get("ETag"))
}

// The UI works offline: no file names a URL off this origin, and every
// file index.html loads is embedded.
func TestStatic_FetchesNothingFromTheNetwork(t *testing.T) {
	files := embedded(t)
	offsite := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|url\(`)
	for name, data := range files {
		if strings.HasSuffix(name, ".svg") {
			// The SVG namespace is a name, not a fetch.
			data = []byte(strings.ReplaceAll(string(data), `xmlns="http://www.w3.org/2000/svg"`, ""))
		}
		must.SliceEmpty(t, offsite.FindAllString(string(data), -1), must.Sprintf("%s refers to something off this origin", name))
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllStringSubmatch(string(files["index.html"]), -1)
	must.SliceNotEmpty(t, refs)
	for _, r := range refs {
		must.StrHasPrefix(t, Prefix, r[1])
		must.MapContainsKey(t, files, strings.TrimPrefix(r[1], Prefix), must.Sprintf("index.html loads %s, which is not embedded", r[1]))
	}
	imports := regexp.MustCompile(`from '(\.[^']+)'`)
	for name, data := range files {
		for _, m := range imports.FindAllStringSubmatch(string(data), -1) {
			dir := name[:strings.LastIndex(name, "/")+1]
			target := resolve(dir, m[1])
			must.MapContainsKey(t, files, target, must.Sprintf("%s imports %s, which is not embedded", name, m[1]))
		}
	}
}

// resolve joins a relative module path to the directory of its importer.
func resolve(dir, rel string) string {
	parts := strings.Split(strings.TrimSuffix(dir, "/"), "/")
	if dir == "" {
		parts = nil
	}
	for _, p := range strings.Split(rel, "/") {
		switch p {
		case ".":
		case "..":
			parts = parts[:len(parts)-1]
		default:
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "/")
}

func TestNewHandler(t *testing.T) {
	t.Run("index.html is required", func(t *testing.T) {
		_, err := newHandler(fstest.MapFS{"static/app.js": {Data: []byte("x")}}, "static")
		must.ErrorIs(t, err, fs.ErrNotExist)
	})
	t.Run("an unknown extension is served as bytes", func(t *testing.T) {
		h, err := newHandler(fstest.MapFS{
			"static/index.html": {Data: []byte("<p>")},
			"static/blob.bin":   {Data: []byte{1, 2}},
		}, "static")
		must.NoError(t, err)
		must.EqOp(t, "application/octet-stream", h.files["blob.bin"].ctype)
		must.EqOp(t, "text/html; charset=utf-8", h.index.ctype)
	})
}
