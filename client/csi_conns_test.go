package client

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/client/csitest"
)

// TestClient_ForgetPluginConns: a deregistered plugin's pooled connection
// is closed and dropped; a registered one's is kept.
func TestClient_ForgetPluginConns(t *testing.T) {
	gone := csitest.StartMockDriver(t, csitest.MockOptions{})
	kept := csitest.StartMockDriver(t, csitest.MockOptions{})
	c := newCSIClient(t, monolith("gone", gone.Socket), monolith("kept", kept.Socket))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.forgetPluginConns(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	for _, p := range []struct{ id, socket string }{{"gone", gone.Socket}, {"kept", kept.Socket}} {
		_, err := c.csiConns.Get(ctx, p.id, p.socket)
		must.NoError(t, err)
	}
	must.EqOp(t, 2, c.csiConns.Len())

	must.NoError(t, c.registry.Deregister("gone", ""))
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return c.csiConns.Len() == 1 }),
		wait.Timeout(10*time.Second), wait.Gap(5*time.Millisecond)))
	cc, err := c.csiConns.Get(ctx, "kept", kept.Socket)
	must.NoError(t, err)
	_, err = cc.Probe(ctx)
	must.NoError(t, err, must.Sprint("the other plugin's connection still works"))
}
