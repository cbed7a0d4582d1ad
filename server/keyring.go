package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/server/keyring"
	"github.com/berth-csi/berth/structs"
)

// The root keyring. Each server keeps the key material in its keystore
// (<data_dir>/keystore) and raft holds only the keys' metadata:
//
//   - the leader, once it has caught up with the log, makes the first key
//     when there is none, then seals any volume secrets still stored in
//     clear by an older version; Keyring.Rotate makes the next ones;
//   - a new key's material goes to the leader's keystore, then to the
//     other servers (Keyring.PutKey, spreadKey), and only once a majority
//     holds it does its metadata go through raft: no server's loss loses a
//     key that sealed anything;
//   - every server watches the keys' metadata and fetches the material of
//     a key it lacks from the other servers (Keyring.GetKey), with backoff,
//     until it has every key (a server that was down or joined later). A
//     key that every other server answers it does not have is lost.

const (
	keystoreDirName = "keystore"
	keyFetchTimeout = 10 * time.Second
)

var (
	// keyFetchRetry paces the replicator's rounds while a key's material
	// cannot be fetched: 500ms doubling up to 30s.
	keyFetchRetry = backoff.Policy{Initial: 500 * time.Millisecond, Max: 30 * time.Second, Multiplier: 2, Jitter: 0.2}
	// rootKeyInitRetry paces the new leader's tries to make the first
	// root key: every second, while leadership lasts.
	rootKeyInitRetry = backoff.Policy{Initial: time.Second, Max: time.Second}
)

// serverKeyring is the server's keyring and the wake-up of its replicator.
type serverKeyring struct {
	ring *keyring.Keyring
	kick chan struct{} // buffered, one pending wake
	// initMu makes the leader's first key once, whether its leader loop
	// or a write that needs a key gets there first.
	initMu sync.Mutex

	lostMu sync.Mutex
	lost   map[string]bool // keys every other server said it lacks
}

// setLost records whether key id is lost (every other server answered
// that it lacks it), and reports whether that changed.
func (k *serverKeyring) setLost(id string, lost bool) bool {
	k.lostMu.Lock()
	defer k.lostMu.Unlock()
	if k.lost[id] == lost {
		return false
	}
	if lost {
		k.lost[id] = true
	} else {
		delete(k.lost, id)
	}
	return true
}

func (k *serverKeyring) isLost(id string) bool {
	k.lostMu.Lock()
	defer k.lostMu.Unlock()
	return k.lost[id]
}

// setupKeyring opens the keystore in the data dir.
func (s *Server) setupKeyring() error {
	ring, err := keyring.Open(filepath.Join(s.config.DataDir, keystoreDirName))
	if err != nil {
		return fmt.Errorf("server: open the root keyring: %w", err)
	}
	s.keys = &serverKeyring{ring: ring, kick: make(chan struct{}, 1), lost: map[string]bool{}}
	return nil
}

// kickKeyReplication wakes the replicator: a key was found missing.
func (s *Server) kickKeyReplication() {
	select {
	case s.keys.kick <- struct{}{}:
	default:
	}
}

// initRootKey runs on a new leader: it makes the first root key when
// there is none, then seals the secrets of volumes stored in clear. It
// retries until it succeeds or leadership ends.
func (s *Server) initRootKey(ctx context.Context) {
	err := backoff.Retry(ctx, rootKeyInitRetry, nil, func(ctx context.Context) error {
		err := s.ensureRootKey()
		if err != nil && ctx.Err() == nil {
			s.logger.Error("keyring: make the first root key; retrying", "error", err)
		}
		return err
	})
	if err != nil {
		return // leadership ended
	}
	if n, err := s.rekeyVolumes(ctx, false); err != nil && ctx.Err() == nil {
		s.logger.Error("keyring: seal volume secrets stored in clear", "error", err)
	} else if n > 0 {
		s.logger.Info("keyring: sealed volume secrets stored in clear", "volumes", n)
	}
}

func (s *Server) ensureRootKey() error {
	s.keys.initMu.Lock()
	defer s.keys.initMu.Unlock()
	active, err := s.State().ActiveRootKeyMeta(nil)
	if err != nil || active != nil {
		return err
	}
	key, _, err := s.newRootKey()
	if err != nil {
		return err
	}
	s.logger.Info("keyring: made the first root key", "key_id", key.KeyID)
	return nil
}

// newRootKey makes a key, writes its material to the keystore, puts it on
// a majority of the servers, then writes its metadata, active, through
// raft. Short of a majority it is Unavailable, and no key is made.
func (s *Server) newRootKey() (*structs.RootKeyMeta, uint64, error) {
	key, err := keyring.NewKey(time.Now())
	if err != nil {
		return nil, 0, err
	}
	if err := s.keys.ring.Add(key); err != nil {
		return nil, 0, structs.NewError(structs.CodeInternal, "keyring: store the new root key on server %s: %v", s.config.NodeName, err)
	}
	if err := s.spreadKey(key); err != nil {
		if rmErr := s.keys.ring.Remove(key.Meta.KeyID); rmErr != nil {
			s.logger.Warn("keyring: remove a root key that was never committed", "key_id", key.Meta.KeyID, "error", rmErr)
		}
		return nil, 0, err
	}
	_, index, err := raftApply[int](s, structs.RootKeyUpsertRequestType, &structs.RootKeyUpsertRequest{Key: key.Meta})
	if err != nil {
		return nil, 0, err
	}
	meta, err := s.State().RootKeyMetaByID(nil, key.Meta.KeyID)
	if err != nil {
		return nil, 0, err
	}
	if meta == nil {
		meta = key.Meta
	}
	return meta, index, nil
}

// replicateKeys runs on every server until it shuts down: it fetches the
// material of every key raft knows and this keystore lacks.
func (s *Server) replicateKeys() {
	failures := 0
	for s.ctx.Err() == nil {
		wait := keyFetchRetry.Delay(failures + 1) // before the next round, if this one fails
		st := s.State()
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		keys, err := st.RootKeyMetas(ws)
		failed := err != nil
		if err != nil {
			s.logger.Error("keyring: read root keys", "error", err)
		}
		for _, k := range keys {
			if s.keys.ring.Has(k.KeyID) {
				continue
			}
			lost, err := s.fetchKey(k.KeyID)
			if changed := s.keys.setLost(k.KeyID, lost); changed && lost {
				s.logger.Error("keyring: root key lost: no server has its material; volumes sealed under it must be registered again with their secrets",
					"key_id", k.KeyID, "error", err)
			}
			if err != nil {
				failed = true
				if !lost {
					s.logger.Warn("keyring: fetch root key from the other servers; will retry", "key_id", k.KeyID, "retry_in", wait, "error", err)
				}
				continue
			}
			s.logger.Info("keyring: fetched root key", "key_id", k.KeyID)
		}
		var retry <-chan time.Time
		if failed {
			failures++
			retry = time.After(wait)
		} else {
			failures = 0
		}
		select {
		case <-ws.WatchCh(s.ctx):
		case <-s.keys.kick:
		case <-retry:
		}
	}
}

// fetchKey asks the other raft servers, in turn, for a key's material and
// adds the first answer to the keystore. lost reports that every other
// server answered that it lacks the key: none is left to ask.
func (s *Server) fetchKey(id string) (lost bool, err error) {
	conf, _, err := s.raftConfiguration()
	if err != nil {
		return false, err
	}
	var errs []error
	lacking := 0
	for _, srv := range conf.Servers {
		addr := string(srv.Address)
		if addr == s.rpcAddr {
			continue
		}
		key, err := s.fetchKeyFrom(addr, id)
		if err != nil {
			if errors.Is(err, structs.ErrNotFound) {
				lacking++
			}
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		return false, s.keys.ring.Add(key)
	}
	if len(errs) == 0 {
		return true, fmt.Errorf("root key %s: no other server to ask", id)
	}
	return lacking == len(errs), errors.Join(errs...)
}

func (s *Server) fetchKeyFrom(addr, id string) (*structs.RootKey, error) {
	ctx, cancel := context.WithTimeout(s.ctx, keyFetchTimeout)
	defer cancel()
	var reply structs.KeyringGetKeyResponse
	args := &structs.KeyringGetKeyRequest{KeyID: id, QueryOptions: structs.QueryOptions{AllowStale: true}}
	if err := s.pool.Call(ctx, addr, "Keyring.GetKey", args, &reply); err != nil {
		return nil, err
	}
	if reply.Key == nil || reply.Key.Meta == nil || reply.Key.Meta.KeyID != id {
		return nil, fmt.Errorf("answered with another key than %s", id)
	}
	return reply.Key, nil
}
