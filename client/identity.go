package client

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-csi/berth/client/internal/atomicfile"
)

// loadOrCreateNodeID reads the node's stable ID from the data dir, making
// it the first time: a restarted client is the same node to the servers.
func loadOrCreateNodeID(dataDir string) (string, error) {
	dir := filepath.Join(dataDir, "client")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("client: create %s: %w", dir, err)
	}
	path := filepath.Join(dir, "node-id")
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if len(id) != 36 {
			return "", fmt.Errorf("client: node ID in %s is malformed (%q); remove the file to make a new one", path, id)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("client: read node ID: %w", err)
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("client: make node ID: %w", err)
	}
	h := hex.EncodeToString(raw[:])
	id := h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	if err := atomicfile.Write(path, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("client: write node ID: %w", err)
	}
	return id, nil
}
