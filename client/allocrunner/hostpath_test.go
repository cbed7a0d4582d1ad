package allocrunner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// writerCap is single-node-writer on a file system.
var writerCap = &structs.CSIVolumeCapability{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter,
	AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}

// createPublished creates a 1 MiB volume "data" with the plugin on socket
// and publishes it to extNode through its controller.
func createPublished(t *testing.T, socket, extNode string) (*csi.CreateVolumeResponse, map[string]string) {
	t.Helper()
	ctx := context.Background()
	cc, err := csi.Dial(ctx, socket, testlog.Logger(t, "controller"), csi.WithPluginID("hostpath"))
	must.NoError(t, err)
	defer cc.Close()
	v, err := cc.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "data", CapacityMin: 1 << 20,
		Capabilities: []*structs.CSIVolumeCapability{writerCap}})
	must.NoError(t, err)
	pc, err := cc.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		ExternalVolumeID: v.ExternalVolumeID, ExternalNodeID: extNode, Capability: writerCap})
	must.NoError(t, err)
	return v, pc
}

// TestRunner_Hostpath: real parts but the servers: berth-hostpath stages
// and publishes the volume through the volume manager, the task writes
// into it through its bind, and after the stop nothing is left mounted,
// neither under the alloc dir nor the plugin's dirs.
func TestRunner_Hostpath(t *testing.T) {
	needRoot(t)
	p := csitest.StartHostpath(t)
	logger := testlog.Logger(t, "hostpath")
	v, pc := createPublished(t, p.Socket, "hostpath-node")

	h := newHarness(t)
	reg := dynamicplugins.New(logger)
	must.NoError(t, reg.Register(&dynamicplugins.PluginInfo{ID: "hostpath", Type: structs.CSIPluginTypeMonolith, Socket: p.Socket}))
	m, err := volumemanager.New(volumemanager.Config{DataDir: h.dataDir, Registry: reg, Logger: logger})
	must.NoError(t, err)
	h.mounter = m
	h.extNode["hostpath"] = "hostpath-node"
	h.servers.volume = func(id string) *structs.CSIVolume {
		return &structs.CSIVolume{ID: id, PluginID: "hostpath", ExternalID: v.ExternalVolumeID, Context: v.VolumeContext}
	}
	h.servers.publishContext = pc

	dest := filepath.Join(openTempDir(t), "srv", "data")
	task := shTask("web", `echo "written by the task" > `+dest+`/hello; cat `+dest+`/hello; echo ready; exec sleep 1000`)
	task.VolumeMounts = []*structs.VolumeMount{{Volume: "data", Destination: dest}}
	alloc := testAlloc(structs.JobTypeService, task)
	alloc.Job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": csiVolume("data", false)}
	r := h.runner(alloc)
	waitFor(t, func() bool { return strings.Contains(readLog(t, r, "web", LogStdout), "ready") })
	must.Eq(t, "written by the task\nready\n", readLog(t, r, "web", LogStdout))

	pluginDir := volumemanager.PluginHostDir(h.dataDir, "hostpath")
	published := filepath.Join(pluginDir, "per-alloc", alloc.ID, "data")
	b, err := os.ReadFile(filepath.Join(published, "hello"))
	must.NoError(t, err)
	must.Eq(t, "written by the task\n", string(b), must.Sprint("the task wrote into the published volume"))

	stop := alloc.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	r.Update(stop)
	waitRunner(t, r)
	must.Eq(t, structs.AllocClientStatusComplete, r.Alloc().ClientStatus)
	for _, dir := range []string{h.dataDir, dest} {
		mps, err := exec.MountsUnder(dir)
		must.NoError(t, err)
		must.SliceEmpty(t, mps, must.Sprintf("nothing left mounted under %s", dir))
	}
	must.NoError(t, r.Destroy())
}
