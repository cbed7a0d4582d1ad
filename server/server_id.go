package server

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/berth-csi/berth/structs"
)

// loadOrCreateID reads the server's stable ID, making one the first time.
func loadOrCreateID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if len(id) < 8 {
			return "", fmt.Errorf("server: stable ID in %s is malformed (%q); remove the file to make a new one", path, id)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("server: read stable ID: %w", err)
	}
	id := structs.NewUUID()
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("server: write stable ID: %w", err)
	}
	return id, nil
}
