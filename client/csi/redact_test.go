package csi

import (
	"bytes"
	"context"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
	"google.golang.org/grpc"

	"github.com/berth-csi/berth/client/csitest"
)

func TestRedact_StripsSecrets(t *testing.T) {
	cases := []struct {
		name string
		req  any
		keep []string
	}{
		{"node stage", &csipb.NodeStageVolumeRequest{
			VolumeId: "vol-1", StagingTargetPath: "/stage",
			Secrets: map[string]string{"password": "hunter2-secret"},
		}, []string{"vol-1", "/stage", "password"}},
		{"create volume", &csipb.CreateVolumeRequest{
			Name:    "data",
			Secrets: map[string]string{"token": "hunter2-secret"},
			VolumeContentSource: &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{
				Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: "snap-1"}}},
		}, []string{"data", "snap-1", "token"}},
		{"controller publish", &csipb.ControllerPublishVolumeRequest{
			VolumeId: "vol-2", NodeId: "n1",
			Secrets: map[string]string{"a": "hunter2-secret", "b": "hunter2-secret-too"},
		}, []string{"vol-2", "n1"}},
		{"mount flags", &csipb.ValidateVolumeCapabilitiesRequest{
			VolumeId: "vol-3",
			VolumeCapabilities: []*csipb.VolumeCapability{{AccessType: &csipb.VolumeCapability_Mount{
				Mount: &csipb.VolumeCapability_MountVolume{FsType: "cifs", MountFlags: []string{"password=hunter2-secret", "ro"}}}}},
		}, []string{"vol-3", "cifs"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := redact(tc.req)
			must.StrNotContains(t, out, "hunter2")
			must.StrContains(t, out, strippedValue)
			for _, k := range tc.keep {
				must.StrContains(t, out, k)
			}
		})
	}
	// The original is untouched.
	req := &csipb.NodeStageVolumeRequest{Secrets: map[string]string{"k": "v"}}
	redact(req)
	must.Eq(t, "v", req.Secrets["k"])
	must.Eq(t, "int", redact(3))
}

func TestClient_LogCall_Trace(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	var buf bytes.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: &buf})
	c, err := Dial(context.Background(), p.Socket, logger, WithPluginID("traced"))
	must.NoError(t, err)
	defer c.Close()

	_, err = c.Probe(context.Background())
	must.NoError(t, err)
	// A call carrying secrets goes through the same interceptor.
	req := &csipb.NodeStageVolumeRequest{VolumeId: "1", Secrets: map[string]string{"password": "hunter2-secret"}}
	_ = c.conn.Invoke(context.Background(), "/csi.v1.Node/NodeStageVolume", req, &csipb.NodeStageVolumeResponse{}, grpc.EmptyCallOption{})

	out := buf.String()
	must.StrContains(t, out, "/csi.v1.Identity/Probe")
	must.StrContains(t, out, "plugin_id=traced")
	must.StrContains(t, out, "NodeStageVolume")
	must.StrNotContains(t, out, "hunter2")
}
