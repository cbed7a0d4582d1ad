package csi

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/internal/testlog"
)

// TestPool_OneConnectionPerSocket: concurrent calls share one client per
// socket; Forget closes it (a caller holding it sees ErrClosed) and the
// next Get dials anew; a missing socket keeps nothing; Close ends all.
func TestPool_OneConnectionPerSocket(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	pool := NewPool(testlog.Logger(t, "pool"))
	t.Cleanup(pool.Close)
	ctx := context.Background()

	var wg sync.WaitGroup
	got := make([]*Client, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := pool.Get(ctx, "mock", p.Socket)
			must.NoError(t, err)
			_, err = c.Probe(ctx)
			must.NoError(t, err)
			got[i] = c
		}()
	}
	wg.Wait()
	for _, c := range got {
		must.EqOp(t, got[0], c, must.Sprint("every caller shares the socket's one client"))
	}
	must.EqOp(t, 1, pool.Len())

	pool.Forget(p.Socket)
	_, err := got[0].Probe(ctx)
	must.ErrorIs(t, err, ErrClosed)
	again, err := pool.Get(ctx, "mock", p.Socket)
	must.NoError(t, err)
	must.NotEqOp(t, got[0], again)
	_, err = again.Probe(ctx)
	must.NoError(t, err)

	_, err = pool.Get(ctx, "gone", filepath.Join(t.TempDir(), "none.sock"))
	must.ErrorIs(t, err, ErrNoSocket)
	must.EqOp(t, 1, pool.Len(), must.Sprint("a failed dial keeps nothing"))

	pool.Close()
	_, err = again.Probe(ctx)
	must.ErrorIs(t, err, ErrClosed)
	_, err = pool.Get(ctx, "mock", p.Socket)
	must.ErrorIs(t, err, ErrClosed)
}
