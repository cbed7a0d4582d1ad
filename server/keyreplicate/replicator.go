package keyreplicate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/clock"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// Ring is the server's keystore, as far as replication uses it
// (*keyring.Keyring).
type Ring interface {
	Has(id string) bool
	Add(key *structs.RootKey) error
}

// Peer is a server of the raft configuration.
type Peer struct {
	Addr  string // its RPC address
	Voter bool
}

// Config is what replication needs from the server that runs it.
type Config struct {
	// Self is this server's RPC address, as Peers lists it.
	Self string
	// Ring is this server's keystore.
	Ring Ring
	// Peers lists the servers of the raft configuration, this one too.
	Peers func() ([]Peer, error)
	// Put gives a key's material to the server at addr; Get asks it for
	// one (an error matching structs.ErrNotFound when it lacks it).
	Put func(ctx context.Context, addr string, key *structs.RootKey) error
	Get func(ctx context.Context, addr, id string) (*structs.RootKey, error)
	// State is the current state store (a snapshot restore replaces it).
	State  func() *state.StateStore
	Logger hclog.Logger
	// Clock paces Run's rounds after a failed one.
	Clock clock.Clock
	// FetchRetry is the wait after the n-th failed round in a row.
	FetchRetry backoff.Policy
	// FetchTimeout bounds one Get; PushTimeout, Spread's pushes.
	FetchTimeout, PushTimeout time.Duration
}

// DefaultConfig is the servers' configuration, without what names the
// server (Self, Ring, Peers, Put, Get, State).
func DefaultConfig() Config {
	return Config{
		Logger: hclog.NewNullLogger(),
		Clock:  clock.System{},
		// 500ms doubling up to 30s.
		FetchRetry:   backoff.Policy{Initial: 500 * time.Millisecond, Max: 30 * time.Second, Multiplier: 2, Jitter: 0.2},
		FetchTimeout: 10 * time.Second,
		PushTimeout:  10 * time.Second,
	}
}

func (c *Config) validate() error {
	if c.Ring == nil || c.Peers == nil || c.Put == nil || c.Get == nil || c.State == nil || c.Logger == nil || c.Clock == nil {
		return errors.New("keyreplicate: Ring, Peers, Put, Get, State, Logger and Clock are required")
	}
	if c.FetchRetry.Initial <= 0 || c.FetchTimeout <= 0 || c.PushTimeout <= 0 {
		return errors.New("keyreplicate: FetchRetry.Initial, FetchTimeout and PushTimeout must be positive")
	}
	return nil
}

// Replicator moves root key material between the servers.
type Replicator struct {
	cfg  Config
	kick chan struct{} // buffered, one pending wake

	lostMu sync.Mutex
	lost   map[string]bool // keys every other server said it lacks
}

// New returns a replicator, or why cfg is incomplete.
func New(cfg Config) (*Replicator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Replicator{cfg: cfg, kick: make(chan struct{}, 1), lost: map[string]bool{}}, nil
}

// Kick wakes Run: a key was found missing.
func (r *Replicator) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Lost reports whether every other server answered, at Run's last try,
// that it lacks key id.
func (r *Replicator) Lost(id string) bool {
	r.lostMu.Lock()
	defer r.lostMu.Unlock()
	return r.lost[id]
}

// setLost records whether key id is lost, and reports whether that
// changed.
func (r *Replicator) setLost(id string, lost bool) bool {
	r.lostMu.Lock()
	defer r.lostMu.Unlock()
	if r.lost[id] == lost {
		return false
	}
	if lost {
		r.lost[id] = true
	} else {
		delete(r.lost, id)
	}
	return true
}

// Run fetches, until ctx ends, the material of every key raft knows and
// the keystore lacks: a round at once, then one on each change to the
// keys, on Kick, and after a failed round at its backoff.
func (r *Replicator) Run(ctx context.Context) {
	log := r.cfg.Logger
	failures := 0
	for ctx.Err() == nil {
		wait := r.cfg.FetchRetry.Delay(failures + 1) // before the next round, if this one fails
		st := r.cfg.State()
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		keys, err := st.RootKeyMetas(ws)
		failed := err != nil
		if err != nil {
			log.Error("keyring: read root keys", "error", err)
		}
		for _, k := range keys {
			if r.cfg.Ring.Has(k.KeyID) {
				continue
			}
			lost, err := r.Fetch(ctx, k.KeyID)
			if changed := r.setLost(k.KeyID, lost); changed && lost {
				log.Error("keyring: root key lost: no server has its material; volumes sealed under it must be registered again with their secrets",
					"key_id", k.KeyID, "error", err)
			}
			if err != nil {
				failed = true
				if !lost {
					log.Warn("keyring: fetch root key from the other servers; will retry", "key_id", k.KeyID, "retry_in", wait, "error", err)
				}
				continue
			}
			log.Info("keyring: fetched root key", "key_id", k.KeyID)
		}
		var retry <-chan time.Time
		if failed {
			failures++
			retry = clock.After(r.cfg.Clock, wait)
		} else {
			failures = 0
		}
		r.wait(ctx, ws, retry)
	}
}

// wait returns on a change to what ws watches, a Kick, retry firing, or
// ctx ending.
func (r *Replicator) wait(ctx context.Context, ws memdb.WatchSet, retry <-chan time.Time) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the watch's goroutine with the wait
	select {
	case <-ws.WatchCh(wctx):
	case <-r.kick:
	case <-retry:
	}
}

// Fetch asks the other servers, in turn, for a key's material and adds
// the first answer to the keystore. lost reports that every other server
// answered that it lacks the key: none is left to ask.
func (r *Replicator) Fetch(ctx context.Context, id string) (lost bool, err error) {
	peers, err := r.cfg.Peers()
	if err != nil {
		return false, err
	}
	var errs []error
	lacking := 0
	for _, p := range peers {
		if p.Addr == r.cfg.Self {
			continue
		}
		key, err := r.fetchFrom(ctx, p.Addr, id)
		if err != nil {
			if errors.Is(err, structs.ErrNotFound) {
				lacking++
			}
			errs = append(errs, fmt.Errorf("%s: %w", p.Addr, err))
			continue
		}
		return false, r.cfg.Ring.Add(key)
	}
	if len(errs) == 0 {
		return true, fmt.Errorf("root key %s: no other server to ask", id)
	}
	return lacking == len(errs), errors.Join(errs...)
}

func (r *Replicator) fetchFrom(ctx context.Context, addr, id string) (*structs.RootKey, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.FetchTimeout)
	defer cancel()
	key, err := r.cfg.Get(ctx, addr, id)
	if err != nil {
		return nil, err
	}
	if key == nil || key.Meta == nil || key.Meta.KeyID != id {
		return nil, fmt.Errorf("answered with another key than %s", id)
	}
	return key, nil
}
