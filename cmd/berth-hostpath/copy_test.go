package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"
)

func TestCopyTree(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	must.NoError(t, os.Chmod(src, 0o751))
	must.NoError(t, os.MkdirAll(filepath.Join(src, "a", "b"), 0o700))
	must.NoError(t, os.WriteFile(filepath.Join(src, "a", "b", "f"), []byte("content"), 0o600))
	must.NoError(t, os.WriteFile(filepath.Join(src, "exec"), nil, 0o755))
	must.NoError(t, os.Symlink("a/b/f", filepath.Join(src, "link")))
	must.NoError(t, os.Symlink("/nowhere", filepath.Join(src, "dangling")))

	must.NoError(t, copyTree(context.Background(), src, dst))

	data, err := os.ReadFile(filepath.Join(dst, "link"))
	must.NoError(t, err)
	must.Eq(t, "content", string(data))
	target, err := os.Readlink(filepath.Join(dst, "dangling"))
	must.NoError(t, err)
	must.Eq(t, "/nowhere", target)
	for path, mode := range map[string]os.FileMode{".": 0o751, "a": 0o700, "a/b/f": 0o600, "exec": 0o755} {
		fi, err := os.Stat(filepath.Join(dst, path))
		must.NoError(t, err)
		must.Eq(t, mode, fi.Mode().Perm(), must.Sprint(path))
	}

	// the copy is independent of its source
	must.NoError(t, os.WriteFile(filepath.Join(src, "a", "b", "f"), []byte("changed"), 0o600))
	data, err = os.ReadFile(filepath.Join(dst, "a", "b", "f"))
	must.NoError(t, err)
	must.Eq(t, "content", string(data))
}

func TestCopyTree_Cancelled(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	must.NoError(t, os.WriteFile(filepath.Join(src, "f"), nil, 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	must.ErrorIs(t, copyTree(ctx, src, dst), context.Canceled)
}
