package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
)

// driver is the plugin: the three CSI services share it.
type driver struct {
	cfg   Config
	log   hclog.Logger
	store *store
	now   func() time.Time

	// opMu serialises every RPC that changes the state or the mount
	// table, so that "look, act, record" is atomic. Reads use the
	// store's immutable state and do not take it.
	opMu sync.Mutex
}

// Modes of the root layout. A volume's directory is open to every user,
// so that a workload writes into it whatever user it runs as; the dirs
// that hold volumes and snapshots are root's alone, so that a volume is
// reached only through its mounts.
const (
	volumeDirMode = 0o777
	holderDirMode = 0o700
)

// newDriver creates the root layout and loads the state file.
func newDriver(cfg Config, log hclog.Logger) (*driver, error) {
	if err := os.MkdirAll(cfg.Root, 0o755); err != nil {
		return nil, fmt.Errorf("hostpath: create %s: %w", cfg.Root, err)
	}
	for _, dir := range []string{filepath.Join(cfg.Root, "volumes"), filepath.Join(cfg.Root, "snapshots")} {
		if err := os.MkdirAll(dir, holderDirMode); err != nil {
			return nil, fmt.Errorf("hostpath: create %s: %w", dir, err)
		}
		if err := os.Chmod(dir, holderDirMode); err != nil { // also a root laid out by an older version
			return nil, fmt.Errorf("hostpath: %w", err)
		}
	}
	st, err := openStore(filepath.Join(cfg.Root, stateFileName))
	if err != nil {
		return nil, err
	}
	cur := st.current()
	log.Info("state loaded", "root", cfg.Root, "volumes", len(cur.Volumes),
		"snapshots", len(cur.Snapshots), "stages", len(cur.Stages), "publishes", len(cur.Publishes))
	return &driver{cfg: cfg, log: log, store: st, now: time.Now}, nil
}

func (d *driver) volumeDir(id string) string {
	return filepath.Join(d.cfg.Root, "volumes", id)
}

func (d *driver) snapshotDir(id string) string {
	return filepath.Join(d.cfg.Root, "snapshots", id)
}

// attachEnabled reports whether the controller offers PUBLISH_UNPUBLISH_VOLUME.
func (d *driver) attachEnabled() bool { return !d.cfg.DisableAttach }

// stageEnabled reports whether the node offers STAGE_UNSTAGE_VOLUME.
func (d *driver) stageEnabled() bool { return !d.cfg.DisableStage }

// newID returns prefix-<16 hex digits>.
func newID(prefix string) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return prefix + "-" + hex.EncodeToString(b[:])
}

// topology returns the node's topology for CSI messages, or nil.
func (d *driver) topology() *csi.Topology {
	if len(d.cfg.Topology) == 0 {
		return nil
	}
	return &csi.Topology{Segments: d.cfg.Topology}
}

// reachable reports whether this node satisfies a topology requirement:
// some requisite topology (or, without requisites, any) matches ours.
func (d *driver) reachable(req *csi.TopologyRequirement) bool {
	if len(d.cfg.Topology) == 0 || len(req.GetRequisite()) == 0 {
		return true
	}
	for _, t := range req.GetRequisite() {
		if topologyMatches(t.GetSegments(), d.cfg.Topology) {
			return true
		}
	}
	return false
}

// topologyMatches: every segment of want has the same value in have.
func topologyMatches(want, have map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// Services are separate types over the one driver, so that each
// registers exactly the methods of its service.
type (
	identityServer struct {
		csi.UnimplementedIdentityServer
		*driver
	}
	controllerServer struct {
		csi.UnimplementedControllerServer
		*driver
	}
	nodeServer struct {
		csi.UnimplementedNodeServer
		*driver
	}
)

var (
	_ csi.IdentityServer   = (*identityServer)(nil)
	_ csi.ControllerServer = (*controllerServer)(nil)
	_ csi.NodeServer       = (*nodeServer)(nil)
)
