package dynamicplugins

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

const eventWait = 5 * time.Second

func next(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		must.True(t, ok, must.Sprint("subscription closed"))
		return ev
	case <-time.After(eventWait):
		t.Fatal("no event")
	}
	return Event{}
}

func noEvent(t *testing.T, ch <-chan Event) {
	t.Helper()
	select {
	case ev := <-ch:
		t.Fatalf("unexpected event %s %s", ev.Type, ev.Plugin.ID)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestRegistry_Subscribe_SnapshotThenLive(t *testing.T) {
	r := newRegistry(t)
	must.NoError(t, r.Register(configPlugin("b")))
	must.NoError(t, r.Register(configPlugin("a")))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := r.Subscribe(ctx)

	// The current plugins first, as registrations, sorted.
	for _, id := range []string{"a", "b"} {
		ev := next(t, ch)
		must.Eq(t, EventRegistered, ev.Type)
		must.Eq(t, configPlugin(id), ev.Plugin)
	}
	noEvent(t, ch)

	must.NoError(t, r.Register(taskPlugin("c", "a1")))
	ev := next(t, ch)
	must.Eq(t, EventRegistered, ev.Type)
	must.Eq(t, "a1", ev.Plugin.AllocID)

	// Re-registering the same thing is not a change.
	must.NoError(t, r.Register(taskPlugin("c", "a1")))
	noEvent(t, ch)

	// A replacement is a registration with the new info.
	must.NoError(t, r.Register(taskPlugin("c", "a2")))
	ev = next(t, ch)
	must.Eq(t, EventRegistered, ev.Type)
	must.Eq(t, "a2", ev.Plugin.AllocID)

	must.NoError(t, r.Deregister("c", "a2"))
	ev = next(t, ch)
	must.Eq(t, EventDeregistered, ev.Type)
	must.Eq(t, taskPlugin("c", "a2"), ev.Plugin)

	// The event is the subscriber's own copy.
	ev.Plugin.Socket = "/changed"
	got, _ := r.Get("a")
	must.Eq(t, "/run/csi/a.sock", got.Socket)

	cancel()
	select {
	case _, ok := <-ch:
		for ok {
			_, ok = <-ch
		}
	case <-time.After(eventWait):
		t.Fatal("subscription not closed when its context ended")
	}
	r.mu.Lock()
	must.MapEmpty(t, r.subs)
	r.mu.Unlock()
}

func TestRegistry_Subscribe_SlowSubscriberDoesNotBlock(t *testing.T) {
	r := newRegistry(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := r.Subscribe(ctx) // never read until the end

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			id := fmt.Sprintf("p%04d", i)
			_ = r.Register(configPlugin(id))
			if i%2 == 1 {
				_ = r.Deregister(id, "")
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(eventWait):
		t.Fatal("Register blocked on a subscriber that does not read")
	}

	// The subscriber converges on the current state.
	view := map[string]*PluginInfo{}
	apply := func(ev Event) {
		switch ev.Type {
		case EventRegistered:
			view[ev.Plugin.ID] = ev.Plugin
		case EventDeregistered:
			delete(view, ev.Plugin.ID)
		}
	}
	for len(view) < 1000 {
		apply(next(t, ch))
	}
	noEvent(t, ch)
	must.MapLen(t, 1000, view)
	for _, p := range r.List() {
		must.Eq(t, p, view[p.ID])
	}
}

func TestRegistry_Subscribe_ConcurrentWritersConverge(t *testing.T) {
	r := newRegistry(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	const subscribers = 3
	views := make([]map[string]*PluginInfo, subscribers)
	chans := make([]<-chan Event, subscribers)
	for i := range subscribers {
		views[i] = map[string]*PluginInfo{}
		chans[i] = r.Subscribe(ctx)
	}

	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := fmt.Sprintf("w%d-%d", w, i%10)
				alloc := fmt.Sprintf("a%d", i)
				if i%3 == 2 {
					_ = r.Deregister(id, fmt.Sprintf("a%d", i-1))
					continue
				}
				_ = r.Register(taskPlugin(id, alloc))
			}
		}()
	}
	wg.Wait()
	want := map[string]*PluginInfo{}
	for _, p := range r.List() {
		want[p.ID] = p
	}

	for i := range subscribers {
		deadline := time.After(eventWait)
	drain:
		for {
			select {
			case ev := <-chans[i]:
				if ev.Type == EventRegistered {
					views[i][ev.Plugin.ID] = ev.Plugin
				} else {
					delete(views[i], ev.Plugin.ID)
				}
			case <-time.After(100 * time.Millisecond):
				break drain
			case <-deadline:
				t.Fatal("subscriber did not settle")
			}
		}
		must.Eq(t, want, views[i])
	}
}

func TestEventType_String(t *testing.T) {
	must.Eq(t, "registered", EventRegistered.String())
	must.Eq(t, "deregistered", EventDeregistered.String())
	must.Eq(t, "unknown", EventType(0).String())
}
