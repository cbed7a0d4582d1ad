package csi

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/client/csitest"
)

const watchWait = 10 * time.Second

func waitSignal(t *testing.T, ch <-chan struct{}, what string) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case _, ok := <-ch:
		must.True(t, ok, must.Sprintf("watch channel closed while waiting for %s", what))
	case <-time.After(watchWait):
		t.Fatalf("no connection signal for %s within %s", what, watchWait)
	}
	return time.Since(start)
}

func TestClient_WatchConnection_KillAndRestart(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	c := dial(t, p.Socket)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := c.Probe(ctx) // READY
	must.NoError(t, err)
	ch := c.WatchConnection(ctx)

	p.Kill()
	t.Logf("kill -> connection signal after %s", waitSignal(t, ch, "the kill"))

	p.Restart()
	// The watcher does not reconnect; probes do, as the plugin manager's do.
	must.Wait(t, wait.InitialSuccess(wait.ErrorFunc(func() error {
		_, err := c.Probe(ctx)
		return err
	}), wait.Timeout(watchWait), wait.Gap(50*time.Millisecond)), must.Sprint("no probe succeeded after the restart"))
	waitSignal(t, ch, "the reconnect")
}

func TestClient_WatchConnection_Stops(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})

	t.Run("context ends", func(t *testing.T) {
		c := dial(t, p.Socket)
		ctx, cancel := context.WithCancel(context.Background())
		ch := c.WatchConnection(ctx)
		cancel()
		drainUntilClosed(t, ch)
	})
	t.Run("client closed", func(t *testing.T) {
		c := dial(t, p.Socket)
		ch := c.WatchConnection(context.Background())
		must.NoError(t, c.Close())
		drainUntilClosed(t, ch)
	})
}

func drainUntilClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	timeout := time.After(watchWait)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("watch channel not closed")
		}
	}
}
