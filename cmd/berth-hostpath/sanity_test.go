package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// TestSanity runs csi-sanity against five plugins served in-process:
// every capability on (attach with -max-volumes 3, stage, topology), one
// each with -disable-attach and -disable-stage, and the block access type
// (loop devices) with and without stage. csi-sanity skips what
// a plugin does not advertise; the skips are the list-health and
// storage-health, group snapshot, modify-volume and snapshot-topology
// specs, plus the attach or stage ones in the variants (the stats and
// volume health specs run). Add -args -ginkgo.v to see every spec.
func TestSanity(t *testing.T) {
	requireRoot(t)
	variants := []struct {
		name   string
		mutate func(*Config)
		block  bool
	}{
		{"all capabilities", func(c *Config) {
			c.MaxVolumes = 3
			c.Topology = map[string]string{"topology.hostpath.berth.dev/node": c.NodeID}
		}, false},
		{"-disable-attach", func(c *Config) { c.DisableAttach = true }, false},
		{"-disable-stage", func(c *Config) { c.DisableStage = true }, false},
		{"block", func(c *Config) { c.MaxVolumes = 3 }, true},
		{"block -disable-stage", func(c *Config) { c.DisableStage = true }, true},
	}
	var contexts []*sanity.TestContext
	for _, v := range variants {
		cfg := testConfig(t)
		v.mutate(&cfg)
		log := testlog.Logger(t, "berth-hostpath")
		if os.Getenv("BERTH_TEST_LOG") == "" {
			log.SetLevel(hclog.Error) // csi-sanity's bad requests fail on purpose, at warn
		}
		d, err := newDriver(cfg, log)
		must.NoError(t, err)
		sock := startPlugin(t, d)
		work := t.TempDir()
		unmountUnder(t, work, cfg.Root)

		sc := sanity.NewTestConfig()
		sc.Address = "unix://" + sock
		sc.TargetPath = filepath.Join(work, "mount")
		sc.StagingPath = filepath.Join(work, "staging")
		sc.TestVolumeSize = 16 << 20
		sc.TestNodeVolumeAttachLimit = true
		if v.block {
			sc.TestVolumeAccessType = "block"
		}
		ginkgo.Describe(v.name, func() {
			contexts = append(contexts, sanity.GinkgoTest(&sc))
		})
	}
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, "berth-hostpath csi-sanity")
	for _, sc := range contexts {
		sc.Finalize()
	}
}
