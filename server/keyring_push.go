package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/berth-csi/berth/structs"
)

// keyPushTimeout bounds the leader's push of a new key to the others.
const keyPushTimeout = 10 * time.Second

// keyPush is the outcome of one server's Keyring.PutKey.
type keyPush struct {
	server raft.Server
	err    error
}

// spreadKey puts a new key's material on the other raft servers, all at
// once, and returns as soon as a majority of the voters, this server
// included, holds it: the key then outlives any one server, this one
// included, before anything can be sealed with it. The pushes still under
// way go on until keyPushTimeout; a server that misses the key fetches it
// later (replicateKeys). Short of a majority it returns Unavailable, and
// the caller must not commit the key.
func (s *Server) spreadKey(key *structs.RootKey) error {
	conf, _, err := s.raftConfiguration()
	if err != nil {
		return err
	}
	var (
		peers  []raft.Server
		voters int
		have   int // voters holding the key
	)
	for _, srv := range conf.Servers {
		voter := srv.Suffrage == raft.Voter
		if voter {
			voters++
		}
		if string(srv.Address) == s.rpcAddr {
			if voter {
				have++
			}
			continue
		}
		peers = append(peers, srv)
	}
	need := voters/2 + 1
	if have >= need {
		return nil
	}

	ctx, cancel := context.WithTimeout(s.ctx, keyPushTimeout)
	results := make(chan keyPush, len(peers))
	var wg sync.WaitGroup
	for _, srv := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- keyPush{server: srv, err: s.pushKeyTo(ctx, string(srv.Address), key)}
		}()
	}
	go func() {
		wg.Wait()
		cancel()
	}()

	var (
		holders []string
		errs    []string
	)
	for range peers {
		r := <-results
		if r.err != nil {
			s.logger.Warn("keyring: could not push a new root key to a server", "key_id", key.Meta.KeyID,
				"peer", r.server.Address, "error", r.err)
			errs = append(errs, fmt.Sprintf("%s: %v", r.server.Address, r.err))
			continue
		}
		holders = append(holders, string(r.server.Address))
		if r.server.Suffrage == raft.Voter {
			have++
		}
		if have >= need {
			return nil
		}
	}
	if len(holders) > 0 {
		s.logger.Warn("keyring: a root key that was never committed stays in the keystore of other servers; it is harmless, and its file may be deleted",
			"key_id", key.Meta.KeyID, "peers", holders)
	}
	return structs.NewError(structs.CodeUnavailable,
		"keyring: the new root key reached %d of %d servers, short of the %d needed; no key was made; retry once a majority of the servers is up: %v",
		have, voters, need, strings.Join(errs, "; "))
}

// pushKeyTo gives key to the server at addr. With ACLs on it carries this
// leader's token, for a cluster without TLS (allowServerOnly).
func (s *Server) pushKeyTo(ctx context.Context, addr string, key *structs.RootKey) error {
	args := &structs.KeyringPutKeyRequest{Key: key}
	s.relayToken(args)
	return s.pool.Call(ctx, addr, "Keyring.PutKey", args, &structs.KeyringPutKeyResponse{})
}
