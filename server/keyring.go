package server

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/server/keyreplicate"
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
//
// The copies between servers are server/keyreplicate's
// (keyring_push.go wires it).

const keystoreDirName = "keystore"

// rootKeyInitRetry paces the new leader's tries to make the first root
// key: every second, while leadership lasts.
var rootKeyInitRetry = backoff.Policy{Initial: time.Second, Max: time.Second}

// serverKeyring is the server's keyring and its replicator.
type serverKeyring struct {
	ring *keyring.Keyring
	repl *keyreplicate.Replicator
	// initMu makes the leader's first key once, whether its leader loop
	// or a write that needs a key gets there first.
	initMu sync.Mutex
}

// isLost reports whether every other server answered that it lacks key
// id.
func (k *serverKeyring) isLost(id string) bool { return k.repl.Lost(id) }

// setupKeyring opens the keystore in the data dir.
func (s *Server) setupKeyring() error {
	ring, err := keyring.Open(filepath.Join(s.config.DataDir, keystoreDirName))
	if err != nil {
		return fmt.Errorf("server: open the root keyring: %w", err)
	}
	repl, err := s.newKeyReplicator(ring)
	if err != nil {
		return err
	}
	s.keys = &serverKeyring{ring: ring, repl: repl}
	return nil
}

// kickKeyReplication wakes the replicator: a key was found missing.
func (s *Server) kickKeyReplication() { s.keys.repl.Kick() }

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
func (s *Server) replicateKeys() { s.keys.repl.Run(s.ctx) }

// fetchKey asks the other raft servers, in turn, for a key's material and
// adds the first answer to the keystore. lost reports that every other
// server answered that it lacks the key: none is left to ask.
func (s *Server) fetchKey(id string) (lost bool, err error) { return s.keys.repl.Fetch(s.ctx, id) }
