package command

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// gossipKeySize is the length of a gossip key (server.GossipKeySize):
// AES-256.
const gossipKeySize = 32

var operatorGossipKeygenCommand = &command{
	name:     "operator gossip keygen",
	synopsis: "Generate a gossip encryption key",
	help: `[options]

  Print a new gossip encryption key: 32 random bytes in base64, for
  server { encrypt = "..." } in every server's config. Servers with the
  key refuse gossip from members without it.
`,
	run: runOperatorGossipKeygen,
}

func runOperatorGossipKeygen(_ context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	if _, status, ok := m.parse(fs, args, 0, 0); !ok {
		return status
	}
	key := make([]byte, gossipKeySize)
	if _, err := rand.Read(key); err != nil {
		return m.fail("generate key: %v", err)
	}
	fmt.Fprintln(m.stdout, base64.StdEncoding.EncodeToString(key))
	return exitOK
}
