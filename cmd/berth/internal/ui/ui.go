package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// Prefix is where the UI lives on the agent's HTTP address.
const Prefix = "/ui/"

// static holds every file the UI serves; nothing else is ever read.
//
//go:embed static
var static embed.FS

// contentTypes by file extension, set here rather than by the mime
// package, whose table the system's mime.types may change. A file whose
// extension is missing here is served as application/octet-stream (and
// fails the package's tests).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".txt":  "text/plain; charset=utf-8",
}

// contentSecurityPolicy lets the pages load and call this origin only: no
// CDN, no inline script, no frames.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// file is one embedded file, ready to serve.
type file struct {
	name  string
	data  []byte
	ctype string
	etag  string
}

// handler serves the embedded files under Prefix.
type handler struct {
	files map[string]*file // by path under static/: "index.html", "js/app.js"
	index *file
}

// Handler serves the UI's files for request paths under Prefix; a path
// that names no file serves index.html, whose script reads the route from
// the URL's hash.
func Handler() http.Handler {
	h, err := newHandler(static, "static")
	if err != nil {
		// The files are compiled in: this is a broken build, and the
		// package's tests catch it first.
		panic("ui: " + err.Error())
	}
	return h
}

func newHandler(fsys fs.FS, root string) (*handler, error) {
	sub, err := fs.Sub(fsys, root)
	if err != nil {
		return nil, err
	}
	h := &handler{files: map[string]*file{}}
	err = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(sub, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		h.files[name] = &file{name: name, data: data, ctype: contentType(name),
			etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if h.index = h.files["index.html"]; h.index == nil {
		return nil, fs.ErrNotExist
	}
	return h, nil
}

// contentType is the Content-Type of an embedded file by its extension.
func contentType(name string) string {
	if t, ok := contentTypes[path.Ext(name)]; ok {
		return t
	}
	return "application/octet-stream"
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the web UI is read with GET; "+r.Method+" is for the API under /v1/", http.StatusMethodNotAllowed)
		return
	}
	f, ok := h.files[strings.TrimPrefix(r.URL.Path, Prefix)]
	if !ok {
		f = h.index
	}
	hdr := w.Header()
	hdr.Set("Content-Type", f.ctype)
	hdr.Set("ETag", f.etag)
	// Revalidated each time (by ETag), so that an upgraded agent's pages
	// are seen at once.
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Security-Policy", contentSecurityPolicy)
	hdr.Set("Referrer-Policy", "no-referrer")
	http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(f.data))
}

// Mount puts the UI in front of api: GET or HEAD / redirects to /ui/, /ui
// to /ui/, paths under /ui/ are the UI's, and every other request goes to
// api as it came.
func Mount(api http.Handler) http.Handler {
	ui := Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case (p == "/" || p == "/ui") && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			http.Redirect(w, r, Prefix, http.StatusFound)
		case strings.HasPrefix(p, Prefix):
			ui.ServeHTTP(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	})
}
