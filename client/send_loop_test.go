package client

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

// The first burst sends of a window go at once, kick after kick; the one
// after them waits until the oldest is a window old.
func TestSendLoop_BurstThenWindow(t *testing.T) {
	const window, burst = 2 * time.Second, 3
	c := &Client{logger: hclog.NewNullLogger()}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	kick := make(chan struct{}, 1)
	var mu sync.Mutex
	var sends []time.Time
	sent := make(chan struct{}, 16)
	go c.sendLoop(ctx, kick, window, burst, "send failed", func(context.Context) error {
		mu.Lock()
		sends = append(sends, time.Now())
		mu.Unlock()
		sent <- struct{}{}
		return nil
	})
	for range burst + 1 {
		notify(kick)
		<-sent
	}
	mu.Lock()
	defer mu.Unlock()
	must.SliceLen(t, burst+1, sends)
	must.GreaterEq(t, window, sends[burst].Sub(sends[0]), must.Sprint("the send after a burst waits until the oldest is a window old"))
}

// The wait of a send, on the clock of the test: none while the oldest of
// the last burst sends is a window old (or there was none), else the rest
// of its window.
func TestBurstWait(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	window := 20 * time.Millisecond
	must.EqOp(t, time.Duration(0), burstWait(time.Time{}, t0, window), must.Sprint("no send yet"))
	must.EqOp(t, time.Duration(0), burstWait(t0, t0.Add(window), window))
	must.EqOp(t, time.Duration(0), burstWait(t0, t0.Add(time.Hour), window))
	must.EqOp(t, 15*time.Millisecond, burstWait(t0, t0.Add(5*time.Millisecond), window))
	must.EqOp(t, window, burstWait(t0, t0, window))
}
