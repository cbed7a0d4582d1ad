package pluginmanager

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// Test timing: probes are fast, bounds are generous (the machine is
// shared); times are logged, never asserted tightly.
const (
	testProbeInterval = 250 * time.Millisecond
	testProbeTimeout  = 500 * time.Millisecond
	waitBound         = 10 * time.Second
)

// fixedNow is the injected clock: UpdateTime and event times equal it.
var fixedNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// recorder collects the manager's updates in order.
type recorder struct {
	mu      sync.Mutex
	updates []Update
	next    int // the first update not yet consumed by wait
	notify  chan struct{}
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1)} }

func (r *recorder) onUpdate(u Update) {
	r.mu.Lock()
	r.updates = append(r.updates, u)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// wait consumes updates in order until one satisfies ok, and returns it
// with how long the wait took.
func (r *recorder) wait(t *testing.T, what string, ok func(Update) bool) (Update, time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := time.After(waitBound)
	for {
		r.mu.Lock()
		for r.next < len(r.updates) {
			u := r.updates[r.next]
			r.next++
			if ok(u) {
				r.mu.Unlock()
				return u, time.Since(start)
			}
		}
		r.mu.Unlock()
		select {
		case <-r.notify:
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, u := range r.updates {
				t.Logf("update: %s", describe(u))
			}
			t.Fatalf("no update %s within %s", what, waitBound)
		}
	}
}

// none asserts that no update arrives for d.
func (r *recorder) none(t *testing.T, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.updates[r.next:] {
		t.Errorf("unexpected update: %s", describe(u))
	}
	r.next = len(r.updates)
}

func describe(u Update) string {
	s := u.PluginID
	for _, side := range []struct {
		name string
		info *structs.CSIInfo
	}{{"controller", u.Controller}, {"node", u.Node}} {
		if side.info == nil {
			s += " " + side.name + "=nil"
		} else {
			s += " " + side.name + "=" + side.info.HealthDescription
		}
	}
	if u.Event != nil {
		s += " event=" + u.Event.Message
	}
	return s
}

func healthy(u Update) bool { h, _ := u.Healthy(); return h && (u.Controller != nil || u.Node != nil) }

func unhealthy(u Update) bool { h, _ := u.Healthy(); return !h }

type testManager struct {
	*Manager
	reg  *dynamicplugins.Registry
	rec  *recorder
	stop func() time.Duration // cancels Run and waits for it; returns how long Run took to return
}

func startManager(t *testing.T) *testManager {
	t.Helper()
	reg := dynamicplugins.New(testlog.Logger(t, "registry"))
	rec := newRecorder()
	m, err := New(Config{
		Logger:        testlog.Logger(t, "test"),
		Registry:      reg,
		ProbeInterval: testProbeInterval,
		ProbeTimeout:  testProbeTimeout,
		OnUpdate:      rec.onUpdate,
		Now:           func() time.Time { return fixedNow },
	})
	must.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	var once sync.Once
	var took time.Duration
	stop := func() time.Duration {
		once.Do(func() {
			start := time.Now()
			cancel()
			select {
			case <-done:
				took = time.Since(start)
			case <-time.After(waitBound):
				t.Errorf("Run did not return within %s of its context ending", waitBound)
			}
		})
		return took
	}
	t.Cleanup(func() { stop() })
	return &testManager{Manager: m, reg: reg, rec: rec, stop: stop}
}

func (tm *testManager) register(t *testing.T, p *dynamicplugins.PluginInfo) {
	t.Helper()
	must.NoError(t, tm.reg.Register(p))
}
