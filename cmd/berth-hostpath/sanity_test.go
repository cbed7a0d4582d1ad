package main

import (
	"path/filepath"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
)

// TestSanity runs csi-sanity against a plugin served in-process, with
// every capability on: attach (limit 3), stage, topology.
func TestSanity(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	cfg.MaxVolumes = 3
	cfg.Topology = map[string]string{"topology.hostpath.berth.dev/node": "node-1"}
	sock := startPlugin(t, newTestDriver(t, cfg))

	work := t.TempDir()
	unmountUnder(t, work, cfg.Root)
	sc := sanity.NewTestConfig()
	sc.Address = "unix://" + sock
	sc.TargetPath = filepath.Join(work, "mount")
	sc.StagingPath = filepath.Join(work, "staging")
	sc.TestVolumeSize = 16 << 20
	sc.TestNodeVolumeAttachLimit = true
	sanity.Test(t, sc)
}
