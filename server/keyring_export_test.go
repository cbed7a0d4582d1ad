package server

import "github.com/berth-csi/berth/structs"

// SnapshotRaft takes a raft snapshot now, for tests that look at what the
// snapshot files hold.
func (s *Server) SnapshotRaft() error { return s.raft.Snapshot().Error() }

// VolumeSecrets opens a stored volume's secrets as the server would on
// its way to a plugin.
func (s *Server) VolumeSecrets(namespace, id string) (structs.CSISecrets, error) {
	vol, err := s.State().CSIVolumeByID(nil, namespace, id)
	if err != nil || vol == nil {
		return nil, err
	}
	return s.volumeSecrets(vol)
}

// HasRootKey reports whether the key's material is in this server's
// keystore.
func (s *Server) HasRootKey(id string) bool { return s.keys.ring.Has(id) }

// MakeRootKey makes a new active root key as Keyring.Rotate does, on this
// server whether it leads or not (a server that just lost its majority).
func (s *Server) MakeRootKey() (*structs.RootKeyMeta, error) {
	meta, _, err := s.newRootKey()
	return meta, err
}
