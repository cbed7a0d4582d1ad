package csi

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/internal/testlog"
)

// TestPool_OneConnectionPerSocket: concurrent calls share one client per
// socket; Forget drops it (the next Get dials anew) and closes it after
// the grace, so that a caller holding it finishes; a missing socket keeps
// nothing; Close ends all.
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

	pool.grace = time.Hour
	pool.Forget(p.Socket)
	_, err := got[0].Probe(ctx)
	must.NoError(t, err, must.Sprint("a forgotten client works through its grace"))
	again, err := pool.Get(ctx, "mock", p.Socket)
	must.NoError(t, err)
	must.NotEqOp(t, got[0], again)
	_, err = again.Probe(ctx)
	must.NoError(t, err)

	_, err = pool.Get(ctx, "gone", filepath.Join(t.TempDir(), "none.sock"))
	must.ErrorIs(t, err, ErrNoSocket)
	must.EqOp(t, 1, pool.Len(), must.Sprint("a failed dial keeps nothing"))

	pool.Close()
	for _, c := range []*Client{again, got[0]} {
		_, err = c.Probe(ctx)
		must.ErrorIs(t, err, ErrClosed, must.Sprint("Close ends the forgotten client too"))
	}
	_, err = pool.Get(ctx, "mock", p.Socket)
	must.ErrorIs(t, err, ErrClosed)
}

// TestPool_ForgetClosesAfterGrace: a forgotten client is closed once the
// grace has passed.
func TestPool_ForgetClosesAfterGrace(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	pool := NewPool(testlog.Logger(t, "pool"))
	t.Cleanup(pool.Close)
	pool.grace = time.Millisecond
	c, err := pool.Get(context.Background(), "mock", p.Socket)
	must.NoError(t, err)
	pool.Forget(p.Socket)
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		_, err := c.Probe(context.Background())
		return errors.Is(err, ErrClosed)
	}), wait.Timeout(10*time.Second), wait.Gap(time.Millisecond)))
}
