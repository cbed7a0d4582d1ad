package structs

import (
	"crypto/rand"
	"encoding/hex"
)

// NewUUID returns a random (version 4) UUID: the IDs of servers, nodes,
// tokens and root keys, and node secrets. It reads crypto/rand, so the
// FSM never calls it: RPC handlers stamp IDs into requests before raft.
// crypto/rand.Read never fails (since Go 1.24 it ends the program if the
// system's source does).
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
