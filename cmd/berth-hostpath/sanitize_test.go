package main

import (
	"context"
	"strings"
	"testing"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/shoenig/test/must"
	"google.golang.org/protobuf/proto"
)

const (
	secretValue = "hunter2-s3cr3t"
	secretFlag  = "context=secret-label"
)

var secrets = map[string]string{"password": secretValue}

func TestSanitize_DropsSecretsAndMountFlags(t *testing.T) {
	capWithFlag := mountCap(singleWriter, secretFlag)
	cases := []proto.Message{
		&csi.CreateVolumeRequest{Name: "v", Secrets: secrets, VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter), capWithFlag}},
		&csi.DeleteVolumeRequest{VolumeId: "v", Secrets: secrets},
		&csi.ControllerPublishVolumeRequest{VolumeId: "v", Secrets: secrets, VolumeCapability: capWithFlag},
		&csi.NodeStageVolumeRequest{VolumeId: "v", Secrets: secrets, VolumeCapability: capWithFlag},
		&csi.NodePublishVolumeRequest{VolumeId: "v", Secrets: secrets, VolumeCapability: capWithFlag},
		&csi.CreateSnapshotRequest{Name: "v", Secrets: secrets},
		&csi.ControllerExpandVolumeRequest{VolumeId: "v", Secrets: secrets, VolumeCapability: capWithFlag},
		&csi.ValidateVolumeCapabilitiesRequest{VolumeId: "v", Secrets: secrets, VolumeCapabilities: []*csi.VolumeCapability{capWithFlag}},
		&csi.ListSnapshotsRequest{SnapshotId: "v", Secrets: secrets},
	}
	for _, m := range cases {
		t.Run(string(m.ProtoReflect().Descriptor().Name()), func(t *testing.T) {
			before := proto.Clone(m)
			out := sanitize(m)
			must.StrNotContains(t, out, secretValue)
			must.StrNotContains(t, out, "password")
			must.StrNotContains(t, out, secretFlag)
			must.True(t, strings.Contains(out, `"v"`), must.Sprintf("the rest is kept: %s", out))
			must.True(t, proto.Equal(before, m), must.Sprint("the message itself is unchanged"))
		})
	}
	must.Eq(t, "{}", sanitize(nil))
}

// TestLogCalls_SecretsNeverReachTheLog drives a plugin over its socket at
// trace level, with secrets and mount flags in calls that succeed and in
// calls that fail, and reads the whole log.
func TestLogCalls_SecretsNeverReachTheLog(t *testing.T) {
	ctx := context.Background()
	var logs testlog.Recorder
	cfg := testConfig(t)
	d, err := newDriver(cfg, logs.Logger("berth-hostpath"))
	must.NoError(t, err)
	conn := dial(t, startPlugin(t, d))
	cc, nc := csi.NewControllerClient(conn), csi.NewNodeClient(conn)

	okCap := mountCap(singleWriter, "noatime")
	vol, err := cc.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v", Secrets: secrets,
		VolumeCapabilities: []*csi.VolumeCapability{okCap}})
	must.NoError(t, err)
	id := vol.Volume.VolumeId
	_, err = cc.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "w", Secrets: secrets,
		VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter, secretFlag)}})
	must.Error(t, err)
	must.StrNotContains(t, err.Error(), secretFlag, must.Sprint("nor the error returned to the CO"))
	_, err = cc.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: "elsewhere",
		Secrets: secrets, VolumeCapability: okCap})
	must.Error(t, err)
	_, err = nc.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: "/nonexistent",
		Secrets: secrets, VolumeCapability: okCap})
	must.Error(t, err)
	_, err = nc.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: "/nonexistent/t",
		StagingTargetPath: "/nonexistent", Secrets: secrets, VolumeCapability: mountCap(singleWriter, secretFlag)})
	must.Error(t, err)
	_, err = cc.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id, Secrets: secrets})
	must.NoError(t, err)

	out := logs.String()
	for _, logged := range []string{"method=CreateVolume", "method=ControllerPublishVolume", "method=NodeStageVolume",
		"method=NodePublishVolume", "method=DeleteVolume", "call failed", `\"volume_id\":\"` + id} {
		must.StrContains(t, out, logged, must.Sprint("the calls are logged"))
	}
	must.StrNotContains(t, out, secretValue)
	must.StrNotContains(t, out, secretFlag)
	must.StrNotContains(t, out, "mount_flags")
	must.StrNotContains(t, out, "secrets")
}
