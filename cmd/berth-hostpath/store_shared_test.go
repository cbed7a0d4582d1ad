package main

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/shoenig/test/must"
)

// TestStore_SharedRoot: two stores on one root, as two instances of the
// plugin on two nodes: each sees what the other wrote, and concurrent
// changes from both are all kept (none written over a stale state).
func TestStore_SharedRoot(t *testing.T) {
	path := filepath.Join(t.TempDir(), stateFileName)
	a, err := openStore(path)
	must.NoError(t, err)
	b, err := openStore(path)
	must.NoError(t, err)

	must.NoError(t, a.update(func(st *state) error {
		st.Volumes["v1"] = &volume{ID: "v1", Name: "one"}
		return nil
	}))
	must.MapContainsKey(t, b.current().Volumes, "v1", must.Sprint("b reads what a wrote"))
	must.NoError(t, b.update(func(st *state) error {
		st.Stages["/b/stage"] = &stageRecord{VolumeID: "v1", Path: "/b/stage"}
		return nil
	}))
	cur := a.current()
	must.MapContainsKey(t, cur.Volumes, "v1")
	must.MapContainsKey(t, cur.Stages, "/b/stage", must.Sprint("a reads what b wrote"))
	same := a.current()
	must.True(t, cur == same, must.Sprint("an unchanged file is not read again"))

	var wg sync.WaitGroup
	const each = 20
	for i, s := range []*store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				id := fmt.Sprintf("s%d-%d", i, j)
				must.NoError(t, s.update(func(st *state) error {
					st.Volumes[id] = &volume{ID: id, Name: id}
					return nil
				}))
			}
		}()
	}
	wg.Wait()
	reopened, err := openStore(path)
	must.NoError(t, err)
	must.MapLen(t, 1+2*each, reopened.current().Volumes, must.Sprint("every change of both instances kept"))
	must.Eq(t, reopened.current(), a.current())
	must.Eq(t, reopened.current(), b.current())
}
