package main

import (
	"context"
	"path/filepath"
	"sort"
	"testing"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// testConfig is a plugin configuration rooted in a temp dir.
func testConfig(t *testing.T) Config {
	return Config{
		Root:     t.TempDir(),
		NodeID:   "node-1",
		Name:     defaultName,
		LogLevel: "info",
	}
}

// newTestDriver opens a driver on cfg, logging to t.
func newTestDriver(t *testing.T, cfg Config) *driver {
	t.Helper()
	d, err := newDriver(cfg, testlog.Logger(t, "berth-hostpath"))
	must.NoError(t, err)
	return d
}

// services returns the three servers of d, for calling them directly.
func services(d *driver) (*identityServer, *controllerServer, *nodeServer) {
	return &identityServer{driver: d}, &controllerServer{driver: d}, &nodeServer{driver: d}
}

// startPlugin serves d on a socket in a temp dir until the test ends and
// returns the socket path.
func startPlugin(t *testing.T, d *driver) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "csi.sock")
	ln, err := listen(sock)
	must.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, d, ln) }()
	t.Cleanup(func() {
		cancel()
		must.NoError(t, <-done)
	})
	return sock
}

// dial connects a CSI client to sock.
func dial(t *testing.T, sock string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	must.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// requireRoot skips a test that mounts when not running as root (and
// fails it under BERTH_TEST_STRICT).
func requireRoot(t *testing.T) {
	t.Helper()
	testlog.NeedRoot(t, "bind mounts need CAP_SYS_ADMIN")
}

// unmountUnder registers a cleanup that unmounts whatever a failed test
// left mounted under dirs, deepest first, before the temp dirs go. Call
// it after creating the dirs: cleanups run last-registered first.
func unmountUnder(t *testing.T, dirs ...string) {
	t.Cleanup(func() {
		var left []string
		for _, d := range dirs {
			infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(d))
			if err != nil {
				t.Logf("cannot list the mounts left under %s: %v", d, err)
				continue
			}
			for _, m := range infos {
				left = append(left, m.Mountpoint)
			}
		}
		sort.Sort(sort.Reverse(sort.StringSlice(left)))
		for _, p := range left {
			t.Logf("unmounting %s, left mounted by the test", p)
			_ = unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		}
	})
}

// mountCap is a mount volume capability with the given access mode.
func mountCap(mode csi.VolumeCapability_AccessMode_Mode, flags ...string) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{MountFlags: flags}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

const singleWriter = csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER

// createVolume creates (or finds) an empty mount volume of size bytes.
func createVolume(t *testing.T, cs *controllerServer, name string, size int64) *csi.Volume {
	t.Helper()
	resp, err := cs.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name:               name,
		CapacityRange:      &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter)},
	})
	must.NoError(t, err)
	return resp.Volume
}

// mustCode asserts that err is a gRPC status with code and a message
// containing each of parts.
func mustCode(t *testing.T, err error, code codes.Code, parts ...string) {
	t.Helper()
	must.Error(t, err)
	st, ok := status.FromError(err)
	must.True(t, ok, must.Sprintf("not a gRPC status: %v", err))
	must.Eq(t, code, st.Code(), must.Sprintf("error: %v", err))
	for _, p := range parts {
		must.StrContains(t, st.Message(), p)
	}
}
