package structs

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// NewUUID returns a random (version 4) UUID: the IDs of servers, nodes,
// tokens and root keys, and node secrets. It reads crypto/rand, so the
// FSM never calls it: RPC handlers stamp IDs into requests before raft.
func NewUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a UUID: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}
