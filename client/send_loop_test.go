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
	start := time.Now()
	for range burst + 1 {
		notify(kick)
		<-sent
	}
	mu.Lock()
	defer mu.Unlock()
	must.SliceLen(t, burst+1, sends)
	must.Less(t, window, sends[burst-1].Sub(start), must.Sprint("the first burst sends wait for no window"))
	must.GreaterEq(t, window, sends[burst].Sub(sends[0]), must.Sprint("the send after a burst waits until the oldest is a window old"))
}
