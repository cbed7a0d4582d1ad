package beneath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"golang.org/x/sys/unix"
)

// world is a root dir as a task leaves it, and a host dir outside it that
// the task's links point at.
type world struct {
	root *Root
	dir  string // the root's path
	host string // outside the root: what must stay untouched
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir, host := t.TempDir(), t.TempDir()
	must.NoError(t, os.WriteFile(filepath.Join(host, "secret"), []byte("host secret\n"), 0o600))
	must.NoError(t, os.Mkdir(filepath.Join(host, "bin"), 0o755))
	r, err := Open(dir)
	must.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return &world{root: r, dir: dir, host: host}
}

func (w *world) link(t *testing.T, target, rel string) {
	t.Helper()
	must.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(w.dir, rel)), 0o755))
	must.NoError(t, os.Symlink(target, filepath.Join(w.dir, rel)))
}

// unchanged checks the host dir is as newWorld made it.
func (w *world) unchanged(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.host, "secret"))
	must.NoError(t, err)
	must.EqOp(t, "host secret\n", string(b), must.Sprint("the host file was written"))
	entries, err := os.ReadDir(w.host)
	must.NoError(t, err)
	must.SliceLen(t, 2, entries, must.Sprint("something was made in the host dir"))
	fi, err := os.Stat(filepath.Join(w.host, "bin"))
	must.NoError(t, err)
	must.EqOp(t, os.FileMode(0o755), fi.Mode().Perm(), must.Sprint("the host dir's mode changed"))
	st := fi.Sys().(*syscall.Stat_t)
	must.EqOp(t, uint32(os.Getuid()), st.Uid, must.Sprint("the host dir's owner changed"))
	sfi, err := os.Stat(filepath.Join(w.host, "secret"))
	must.NoError(t, err)
	must.EqOp(t, os.FileMode(0o600), sfi.Mode().Perm(), must.Sprint("the host file's mode changed"))
}

// TestRoot_OpenFile_RefusesLinks: a log file a task replaced with a link
// (to a host file, a dangling one, or through a linked dir) is neither
// read, nor appended to, nor created through.
func TestRoot_OpenFile_RefusesLinks(t *testing.T) {
	cases := []struct {
		name  string
		plant func(t *testing.T, w *world)
		rel   string
	}{
		{"file is a link", func(t *testing.T, w *world) { w.link(t, filepath.Join(w.host, "secret"), "logs/web.stdout.0") }, "logs/web.stdout.0"},
		{"dangling link", func(t *testing.T, w *world) { w.link(t, filepath.Join(w.host, "new"), "logs/web.stdout.0") }, "logs/web.stdout.0"},
		{"relative link", func(t *testing.T, w *world) {
			rel, err := filepath.Rel(filepath.Join(w.dir, "logs"), filepath.Join(w.host, "secret"))
			must.NoError(t, err)
			w.link(t, rel, "logs/web.stdout.0")
		}, "logs/web.stdout.0"},
		{"dir is a link", func(t *testing.T, w *world) { w.link(t, w.host, "logs") }, "logs/secret"},
	}
	for _, tc := range cases {
		for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_APPEND | os.O_CREATE, os.O_WRONLY | os.O_TRUNC} {
			t.Run(tc.name, func(t *testing.T) {
				w := newWorld(t)
				tc.plant(t, w)
				f, err := w.root.OpenFile(tc.rel, flag, 0o644)
				if err == nil {
					f.Close()
				}
				must.ErrorIs(t, err, ErrLink)
				var pe *fs.PathError
				must.True(t, errors.As(err, &pe))
				must.StrContains(t, pe.Path, w.dir, must.Sprint("the error names the path under the root"))
				w.unchanged(t)
			})
		}
	}
}

// TestRoot_OpenFile_NamesTheLink: a link in the middle of the path is
// named in the error.
func TestRoot_OpenFile_NamesTheLink(t *testing.T) {
	w := newWorld(t)
	w.link(t, w.host, "alloc/logs")
	_, err := w.root.OpenFile("alloc/logs/secret", os.O_RDONLY, 0)
	must.ErrorIs(t, err, ErrLink)
	must.StrContains(t, err.Error(), filepath.Join(w.dir, "alloc/logs")+" is a link")
}

// TestRoot_OpenFile_Regular: a regular file is created, appended to and
// read; anything else (a FIFO, a dir) is refused before it is opened.
func TestRoot_OpenFile_Regular(t *testing.T) {
	w := newWorld(t)
	must.NoError(t, w.root.MkdirAll("logs", 0o755))
	for i := 0; i < 2; i++ {
		f, err := w.root.OpenFile("logs/web.stdout.0", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		must.NoError(t, err)
		must.EqOp(t, filepath.Join(w.dir, "logs/web.stdout.0"), f.Name())
		_, err = f.WriteString("line\n")
		must.NoError(t, err)
		must.NoError(t, f.Close())
	}
	f, err := w.root.OpenFile("logs/web.stdout.0", os.O_RDONLY, 0)
	must.NoError(t, err)
	b := make([]byte, 64)
	n, _ := f.Read(b)
	f.Close()
	must.EqOp(t, "line\nline\n", string(b[:n]))

	must.NoError(t, unix.Mkfifo(filepath.Join(w.dir, "logs/fifo"), 0o644))
	done := make(chan error, 1)
	go func() {
		f, err := w.root.OpenFile("logs/fifo", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		must.ErrorIs(t, err, ErrNotRegular)
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO blocked: it was opened, not refused")
	}
	_, err = w.root.OpenFile("logs", os.O_RDONLY, 0)
	must.ErrorIs(t, err, ErrNotRegular)
}

// TestRoot_Escapes: ".." and absolute paths never leave the root.
func TestRoot_Escapes(t *testing.T) {
	w := newWorld(t)
	rel, err := filepath.Rel(w.dir, filepath.Join(w.host, "secret"))
	must.NoError(t, err)
	for _, p := range []string{rel, filepath.Join(w.host, "secret"), "../x"} {
		_, err := w.root.OpenFile(p, os.O_RDONLY, 0)
		must.ErrorIs(t, err, ErrEscape, must.Sprintf("path %q", p))
	}
	must.ErrorIs(t, w.root.MkdirAll(filepath.Join(rel, "..", "made"), 0o755), ErrEscape)
	w.unchanged(t)
}

// TestRoot_MkdirAll: missing dirs are made; a link or a file where a dir
// belongs is refused, and nothing is made through it.
func TestRoot_MkdirAll(t *testing.T) {
	w := newWorld(t)
	must.NoError(t, w.root.MkdirAll("web/local", 0o755))
	must.NoError(t, w.root.MkdirAll("web/local", 0o755), must.Sprint("made again: nothing to do"))
	must.NoError(t, w.root.Dir("web/local"))

	must.NoError(t, os.Remove(filepath.Join(w.dir, "web/local")))
	w.link(t, filepath.Join(w.host, "bin"), "web/local")
	err := w.root.MkdirAll("web/local", 0o755)
	must.ErrorIs(t, err, ErrLink)
	must.ErrorIs(t, w.root.Dir("web/local"), ErrLink)
	must.ErrorIs(t, w.root.MkdirAll("web/local/sub", 0o755), ErrLink)

	must.NoError(t, os.WriteFile(filepath.Join(w.dir, "file"), nil, 0o644))
	must.ErrorIs(t, w.root.MkdirAll("file/sub", 0o755), ErrNotDir)
	must.ErrorIs(t, w.root.Dir("file"), ErrNotDir)
	w.unchanged(t)
}

// TestRoot_ChownChmod: the owner and mode of a dir change; a link is
// refused and what it points at keeps its owner and mode.
func TestRoot_ChownChmod(t *testing.T) {
	testlog.NeedRoot(t, "chown to another user")
	w := newWorld(t)
	must.NoError(t, w.root.MkdirAll("web/local", 0o755))
	must.NoError(t, w.root.Chown("web/local", 65534, 65534))
	must.NoError(t, w.root.Chmod("web/local", 0o700))
	fi, err := os.Stat(filepath.Join(w.dir, "web/local"))
	must.NoError(t, err)
	must.EqOp(t, uint32(65534), fi.Sys().(*syscall.Stat_t).Uid)
	must.EqOp(t, os.FileMode(0o700), fi.Mode().Perm())

	w.link(t, filepath.Join(w.host, "bin"), "web/other")
	must.ErrorIs(t, w.root.Chown("web/other", 65534, 65534), ErrLink)
	must.ErrorIs(t, w.root.Chmod("web/other", 0o777), ErrLink)
	w.link(t, filepath.Join(w.host, "secret"), "web/secret")
	must.ErrorIs(t, w.root.Chmod("web/secret", 0o644), ErrLink)
	// A hard link to a host file has the host file's inode: a file is
	// never changed, only a dir.
	must.NoError(t, os.Link(filepath.Join(w.host, "secret"), filepath.Join(w.dir, "web", "hard")))
	must.ErrorIs(t, w.root.Chown("web/hard", 65534, 65534), ErrNotDir)
	must.ErrorIs(t, w.root.Chmod("web/hard", 0o666), ErrNotDir)
	w.unchanged(t)
}

// TestOpen_RootIsALink: the root itself may not be a link.
func TestOpen_RootIsALink(t *testing.T) {
	dir := t.TempDir()
	must.NoError(t, os.Symlink(t.TempDir(), filepath.Join(dir, "root")))
	_, err := Open(filepath.Join(dir, "root"))
	must.ErrorIs(t, err, ErrLink)
}

// TestSetModTime: the time is set through the fd, to the nanosecond.
func TestSetModTime(t *testing.T) {
	w := newWorld(t)
	f, err := w.root.OpenFile("log", os.O_WRONLY|os.O_CREATE, 0o644)
	must.NoError(t, err)
	defer f.Close()
	at := time.Date(2026, 11, 27, 10, 0, 0, 123456789, time.UTC)
	must.NoError(t, SetModTime(f, at))
	fi, err := w.root.Stat("log")
	must.NoError(t, err)
	must.True(t, fi.ModTime().Equal(at), must.Sprintf("mtime %s", fi.ModTime()))
}

// TestSplit: a path under a root, or an error naming both.
func TestSplit(t *testing.T) {
	rel, err := Split("/data/alloc/a1", "/data/alloc/a1/alloc/logs/web.stdout.0")
	must.NoError(t, err)
	must.EqOp(t, "alloc/logs/web.stdout.0", rel)
	_, err = Split("/data/alloc/a1", "/data/alloc/a2/x")
	must.ErrorIs(t, err, ErrEscape)
	must.True(t, strings.Contains(err.Error(), "not under /data/alloc/a1"))
}
