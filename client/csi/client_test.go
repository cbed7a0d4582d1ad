package csi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

func dial(t *testing.T, socket string, opts ...Option) *Client {
	t.Helper()
	c, err := Dial(context.Background(), socket, testlog.Logger(t, "test"), append([]Option{WithPluginID("mock")}, opts...)...)
	must.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDial_Errors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file.sock")
	must.NoError(t, os.WriteFile(file, nil, 0o644))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	cases := []struct {
		name   string
		ctx    context.Context
		socket string
		is     error
		final  bool
	}{
		{"missing socket", context.Background(), filepath.Join(dir, "none.sock"), ErrNoSocket, false},
		{"relative path", context.Background(), "csi.sock", ErrInvalidPath, true},
		{"regular file", context.Background(), file, ErrNotSocket, false},
		{"context ended", cancelled, filepath.Join(dir, "none.sock"), context.Canceled, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(tc.ctx, tc.socket, nil, WithPluginID("p1"))
			must.Nil(t, c)
			must.ErrorIs(t, err, tc.is)
			must.StrHasPrefix(t, `plugin "p1": dial: `, err.Error())
			must.Eq(t, tc.final, IsFinal(err))
		})
	}
}

func TestClient_Identity_MockDriver(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{Name: "identity.test"})
	c := dial(t, p.Socket)
	ctx := context.Background()

	name, version, err := c.PluginInfo(ctx)
	must.NoError(t, err)
	must.Eq(t, "identity.test", name)
	must.Eq(t, csitest.MockVendorVersion, version)

	caps, err := c.PluginCapabilities(ctx)
	must.NoError(t, err)
	must.Eq(t, &PluginCapabilities{ControllerService: true, OnlineExpansion: true}, caps)

	ready, err := c.Probe(ctx)
	must.NoError(t, err)
	must.True(t, ready)
}

func TestClient_PluginCapabilities_Flags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want *PluginCapabilities
	}{
		{"defaults", nil, &PluginCapabilities{ControllerService: true, OnlineExpansion: true}},
		{"topology", []string{"-enable-topology"},
			&PluginCapabilities{ControllerService: true, VolumeAccessibilityConstraints: true, OnlineExpansion: true}},
		{"offline expansion", []string{"-disable-online-expansion"},
			&PluginCapabilities{ControllerService: true, OfflineExpansion: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: tc.args})
			caps, err := dial(t, p.Socket).PluginCapabilities(context.Background())
			must.NoError(t, err)
			must.Eq(t, tc.want, caps)
		})
	}
}

func TestClient_NodeGetInfo_Flags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want *structs.CSINodeInfo
		caps *NodeCapabilities
	}{
		{"defaults", nil,
			&structs.CSINodeInfo{ID: csitest.DefaultMockName, MaxVolumes: csitest.MockAttachLimit},
			// The mock also advertises UNKNOWN(0) and the removed
			// VOLUME_CONDITION(4): both are ignored.
			&NodeCapabilities{RequiresNodeStageVolume: true, SupportsStats: true}},
		{"topology, limit, node expansion", []string{"-enable-topology", "-attach-limit=7", "-node-expand-required"},
			&structs.CSINodeInfo{ID: csitest.DefaultMockName, MaxVolumes: 7,
				AccessibleTopology: &structs.CSITopology{Segments: map[string]string{"io.kubernetes.storage.mock/node": "some-mock-node"}}},
			&NodeCapabilities{RequiresNodeStageVolume: true, SupportsStats: true, SupportsExpand: true}},
		{"no limit", []string{"-attach-limit=0"},
			&structs.CSINodeInfo{ID: csitest.DefaultMockName},
			&NodeCapabilities{RequiresNodeStageVolume: true, SupportsStats: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: tc.args})
			c := dial(t, p.Socket)
			info, err := c.NodeGetInfo(context.Background())
			must.NoError(t, err)
			must.Eq(t, tc.want, info)

			caps, err := c.NodeGetCapabilities(context.Background())
			must.NoError(t, err)
			must.Eq(t, tc.caps, caps)

			caps.Apply(info)
			must.Eq(t, tc.caps.RequiresNodeStageVolume, info.RequiresNodeStageVolume)
			must.Eq(t, tc.caps.SupportsExpand, info.SupportsExpand)
		})
	}
}

func TestClient_ControllerGetCapabilities_MockDriver(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	info, err := dial(t, p.Socket).ControllerGetCapabilities(context.Background())
	must.NoError(t, err)
	// Everything the mock advertises; its 11 (the removed VOLUME_CONDITION)
	// is ignored, so SupportsCondition stays false.
	must.Eq(t, &structs.CSIControllerInfo{
		SupportsCreateDelete:             true,
		SupportsAttachDetach:             true,
		SupportsListVolumes:              true,
		SupportsGetCapacity:              true,
		SupportsCreateDeleteSnapshot:     true,
		SupportsListSnapshots:            true,
		SupportsClone:                    true,
		SupportsReadOnlyAttach:           true,
		SupportsExpand:                   true,
		SupportsListVolumesAttachedNodes: true,
		SupportsGet:                      true,
	}, info)
}

func TestClient_SplitSockets_ServicesPerSocket(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ControllerSocket: true})
	ctx := context.Background()
	node, ctrl := dial(t, p.Socket), dial(t, p.ControllerSocket)

	_, err := node.NodeGetInfo(ctx)
	must.NoError(t, err)
	_, err = ctrl.ControllerGetCapabilities(ctx)
	must.NoError(t, err)
	_, err = ctrl.Probe(ctx) // identity is on both
	must.NoError(t, err)

	_, err = node.ControllerGetCapabilities(ctx)
	must.Eq(t, CodeUnimplemented, CodeOf(err))
	must.True(t, IsFinal(err))
	_, err = ctrl.NodeGetInfo(ctx)
	must.Eq(t, CodeUnimplemented, CodeOf(err))
}

func TestClient_Errors_InjectedByHooks(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{Hooks: `
nodeGetInfo: |
  UNAVAILABLE;
nodeGetCapabilities: |
  FAILEDPRECONDITION;
controllerGetCapabilitiesStart: |
  INVALIDARGUMENT;
`})
	c := dial(t, p.Socket)
	ctx := context.Background()

	_, err := c.NodeGetInfo(ctx)
	var ce *Error
	must.True(t, errors.As(err, &ce))
	must.Eq(t, "mock", ce.Plugin)
	must.Eq(t, "NodeGetInfo", ce.Call)
	must.Eq(t, CodeUnavailable, ce.Code)
	must.Eq(t, `plugin "mock": NodeGetInfo: Unavailable: Exec hook NodeGetInfo returned non-OK code`, err.Error())
	must.False(t, IsFinal(err))

	_, err = c.NodeGetCapabilities(ctx)
	must.Eq(t, CodeFailedPrecondition, CodeOf(err))
	must.True(t, IsFinal(err))

	_, err = c.ControllerGetCapabilities(ctx)
	must.Eq(t, CodeInvalidArgument, CodeOf(err))
	must.StrContains(t, err.Error(), `plugin "mock": ControllerGetCapabilities: InvalidArgument`)
	must.True(t, IsFinal(err))

	_, err = c.Probe(ctx) // no hook: still healthy
	must.NoError(t, err)
}

func TestClient_Probe_Hung(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	c := dial(t, p.Socket, WithCallTimeout(300*time.Millisecond))
	_, err := c.Probe(context.Background())
	must.NoError(t, err)

	p.Pause()
	defer p.Resume()
	start := time.Now()
	_, err = c.Probe(context.Background())
	t.Logf("probe of a stopped plugin failed after %s: %v", time.Since(start), err)
	must.Eq(t, CodeDeadlineExceeded, CodeOf(err))
	must.False(t, IsFinal(err))
	must.StrHasPrefix(t, `plugin "mock": Probe: DeadlineExceeded`, err.Error())
}

func TestClient_Probe_CallerDeadlineWins(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	c := dial(t, p.Socket) // the default per-call timeout is long
	p.Pause()
	defer p.Resume()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Probe(ctx)
	must.Eq(t, CodeDeadlineExceeded, CodeOf(err))
}

func TestClient_Calls_NotCSI(t *testing.T) {
	cases := []struct {
		name   string
		socket func(testing.TB) string
	}{
		{"accepts and closes", csitest.ServeClosingSocket},
		{"http server", csitest.ServeHTTPSocket},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, tc.socket(t), WithCallTimeout(2*time.Second))
			_, _, err := c.PluginInfo(context.Background())
			t.Logf("GetPluginInfo: %v", err)
			must.Error(t, err)
			must.StrHasPrefix(t, `plugin "mock": GetPluginInfo: `, err.Error())
			must.False(t, IsFinal(err))
		})
	}
}

func TestClient_Close_CallsFail(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	c := dial(t, p.Socket)
	must.NoError(t, c.Close())
	must.NoError(t, c.Close()) // idempotent
	_, err := c.Probe(context.Background())
	must.ErrorIs(t, err, ErrClosed)
	must.True(t, IsFinal(err))
}

func TestClient_Crash_Restart(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	c := dial(t, p.Socket)
	ctx := context.Background()
	_, err := c.Probe(ctx)
	must.NoError(t, err)

	p.Kill()
	_, err = c.Probe(ctx)
	must.Eq(t, CodeUnavailable, CodeOf(err))

	p.Restart()
	// gRPC reconnects by itself, at most a second apart.
	must.Wait(t, wait.InitialSuccess(wait.ErrorFunc(func() error {
		_, err := c.Probe(ctx)
		return err
	}), wait.Timeout(10*time.Second), wait.Gap(50*time.Millisecond)), must.Sprint("no probe succeeded after the restart"))
}
