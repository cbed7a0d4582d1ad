package server

import (
	"context"

	"github.com/hashicorp/raft"

	"github.com/berth-csi/berth/server/keyreplicate"
	"github.com/berth-csi/berth/server/keyring"
	"github.com/berth-csi/berth/structs"
)

// newKeyReplicator builds the replicator of ring's material
// (server/keyreplicate): its peers are the raft configuration's servers,
// and it calls them over the server pool.
func (s *Server) newKeyReplicator(ring *keyring.Keyring) (*keyreplicate.Replicator, error) {
	cfg := keyreplicate.DefaultConfig()
	cfg.Self = s.rpcAddr
	cfg.Ring = ring
	cfg.Peers = s.keyPeers
	cfg.Put = s.pushKeyTo
	cfg.Get = s.getKeyFrom
	cfg.State = s.State
	cfg.Logger = s.logger
	return keyreplicate.New(cfg)
}

// keyPeers lists the raft configuration's servers.
func (s *Server) keyPeers() ([]keyreplicate.Peer, error) {
	conf, _, err := s.raftConfiguration()
	if err != nil {
		return nil, err
	}
	peers := make([]keyreplicate.Peer, 0, len(conf.Servers))
	for _, srv := range conf.Servers {
		peers = append(peers, keyreplicate.Peer{Addr: string(srv.Address), Voter: srv.Suffrage == raft.Voter})
	}
	return peers, nil
}

// spreadKey puts a new key's material on the other raft servers, all at
// once, and returns as soon as a majority of the voters, this server
// included, holds it (keyreplicate.Replicator.Spread). Short of a
// majority it returns Unavailable, and the caller must not commit the
// key.
func (s *Server) spreadKey(key *structs.RootKey) error { return s.keys.repl.Spread(s.ctx, key) }

// pushKeyTo gives key to the server at addr. With ACLs on it carries this
// leader's token, for a cluster without TLS (allowServerOnly).
func (s *Server) pushKeyTo(ctx context.Context, addr string, key *structs.RootKey) error {
	args := &structs.KeyringPutKeyRequest{Key: key}
	s.relayToken(args)
	return s.pool.Call(ctx, addr, "Keyring.PutKey", args, &structs.KeyringPutKeyResponse{})
}

// getKeyFrom asks the server at addr for key id's material.
func (s *Server) getKeyFrom(ctx context.Context, addr, id string) (*structs.RootKey, error) {
	var reply structs.KeyringGetKeyResponse
	args := &structs.KeyringGetKeyRequest{KeyID: id, QueryOptions: structs.QueryOptions{AllowStale: true}}
	if err := s.pool.Call(ctx, addr, "Keyring.GetKey", args, &reply); err != nil {
		return nil, err
	}
	return reply.Key, nil
}
