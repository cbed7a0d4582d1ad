package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-csi/berth/internal/atomicfile"
	"github.com/berth-csi/berth/structs"
)

// loadOrCreateNodeID reads the node's stable ID from the data dir, making
// it the first time: a restarted client is the same node to the servers.
func loadOrCreateNodeID(dataDir string) (string, error) {
	return loadOrCreateUUID(dataDir, "node-id", "node ID")
}

// loadOrCreateNodeSecret reads the node's secret from the data dir, next
// to its ID, making it the first time (crypto/rand; the file is 0600).
// The client sends it as the AuthToken of every call it makes for the
// node; the servers keep only its hash, and refuse a node's calls without
// it. It never reaches a log line.
func loadOrCreateNodeSecret(dataDir string) (string, error) {
	return loadOrCreateUUID(dataDir, "node-secret", "node secret")
}

// loadOrCreateUUID reads a UUID from <dataDir>/client/<name>, or makes a
// random one there (mode 0600) when the file does not exist. what names it
// in errors; the value itself is never in one.
func loadOrCreateUUID(dataDir, name, what string) (string, error) {
	dir := filepath.Join(dataDir, "client")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("client: create %s: %w", dir, err)
	}
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if len(id) != 36 {
			return "", fmt.Errorf("client: %s in %s is malformed (%d characters, want 36); remove the file to make a new one", what, path, len(id))
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("client: read %s: %w", what, err)
	}
	id := structs.NewUUID()
	if err := atomicfile.Write(path, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("client: write %s: %w", what, err)
	}
	return id, nil
}
