package keyreplicate

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/berth-csi/berth/structs"
)

// push is the outcome of one server's Put.
type push struct {
	peer Peer
	err  error
}

// Spread puts a new key's material on the other servers, all at once, and
// returns as soon as a majority of the voters, this server included, holds
// it: the key then outlives any one server, this one included, before
// anything can be sealed with it. The pushes still under way go on until
// PushTimeout; a server that misses the key fetches it later (Run). Short
// of a majority it returns Unavailable, and the caller must not commit the
// key.
func (r *Replicator) Spread(ctx context.Context, key *structs.RootKey) error {
	all, err := r.cfg.Peers()
	if err != nil {
		return err
	}
	var (
		peers  []Peer
		voters int
		have   int // voters holding the key
	)
	for _, p := range all {
		if p.Voter {
			voters++
		}
		if p.Addr == r.cfg.Self {
			if p.Voter {
				have++
			}
			continue
		}
		peers = append(peers, p)
	}
	need := voters/2 + 1
	if have >= need {
		return nil
	}

	ctx, cancel := context.WithTimeout(ctx, r.cfg.PushTimeout)
	results := make(chan push, len(peers))
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- push{peer: p, err: r.cfg.Put(ctx, p.Addr, key)}
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
		res := <-results
		if res.err != nil {
			r.cfg.Logger.Warn("keyring: could not push a new root key to a server", "key_id", key.Meta.KeyID,
				"peer", res.peer.Addr, "error", res.err)
			errs = append(errs, fmt.Sprintf("%s: %v", res.peer.Addr, res.err))
			continue
		}
		holders = append(holders, res.peer.Addr)
		if res.peer.Voter {
			have++
		}
		if have >= need {
			return nil
		}
	}
	if len(holders) > 0 {
		r.cfg.Logger.Warn("keyring: a root key that was never committed stays in the keystore of other servers; it is harmless, and its file may be deleted",
			"key_id", key.Meta.KeyID, "peers", holders)
	}
	return structs.NewError(structs.CodeUnavailable,
		"keyring: the new root key reached %d of %d servers, short of the %d needed; no key was made; retry once a majority of the servers is up: %v",
		have, voters, need, strings.Join(errs, "; "))
}
