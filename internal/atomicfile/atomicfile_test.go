package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"
)

func TestWrite_ReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	must.NoError(t, Write(path, []byte("one")))
	must.NoError(t, Write(path, []byte("two")))

	b, err := os.ReadFile(path)
	must.NoError(t, err)
	must.Eq(t, "two", string(b))
	fi, err := os.Stat(path)
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o600), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	must.NoError(t, err)
	must.SliceLen(t, 1, entries, must.Sprint("no temp file is left behind"))
}

func TestWrite_FailureKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	must.NoError(t, Write(path, []byte("old")))
	must.Error(t, Write(filepath.Join(dir, "missing", "state.json"), []byte("new")))

	// A path that is a directory cannot be renamed over: the temp file
	// is removed and the directory is untouched.
	must.NoError(t, os.Mkdir(filepath.Join(dir, "taken"), 0o700))
	must.Error(t, Write(filepath.Join(dir, "taken"), []byte("new")))
	entries, err := os.ReadDir(dir)
	must.NoError(t, err)
	must.SliceLen(t, 2, entries, must.Sprint("state.json and taken, no temp file"))
	b, err := os.ReadFile(path)
	must.NoError(t, err)
	must.Eq(t, "old", string(b))
}
