package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/client/internal/keyedsem"
	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/structs"
)

// newCSIClient builds a client (not run: nothing here needs the servers)
// with plugins registered as the client config declares them.
func newCSIClient(t *testing.T, plugins ...*dynamicplugins.PluginInfo) *Client {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Servers = []string{"127.0.0.1:1"}
	cfg.Logger = testlog.Logger(t, "client")
	cfg.Plugins = plugins
	c, err := New(cfg)
	must.NoError(t, err)
	t.Cleanup(func() {
		c.rpcServer.Shutdown()
		c.pool.Shutdown()
		c.csiConns.Close()
	})
	return c
}

func monolith(id, socket string) *dynamicplugins.PluginInfo {
	return &dynamicplugins.PluginInfo{ID: id, Type: structs.CSIPluginTypeMonolith, Socket: socket}
}

var fsWriter = []*structs.CSIVolumeCapability{{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter,
	AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}}

// callWire makes one call to the client's RPC server over a connection, as
// a server does over the client's session: args and reply cross the wire
// in msgpack, and the error comes back as a coded *structs.Error.
func callWire(t *testing.T, c *Client, method string, args, reply any) error {
	t.Helper()
	srv, cli := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.rpcServer.ServeConn(ctx, srv)
	}()
	defer func() {
		cancel()
		cli.Close()
		<-done
	}()
	return rpc.CallConn(ctx, cli, method, args, reply)
}

func TestClientCSI_Controller_MockDriverOverTheWire(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}})
	c := newCSIClient(t, monolith("mock", p.Socket))
	secrets := structs.CSISecrets{"secretKey": "s3cr3t-value"}

	create := &structs.ClientCSIControllerCreateVolumeRequest{PluginID: "mock", NodeID: c.NodeID(), Name: "data",
		CapacityMin: 1 << 20, Capabilities: fsWriter, Secrets: secrets}
	var created structs.ClientCSIControllerCreateVolumeResponse
	must.NoError(t, callWire(t, c, "ClientCSI.ControllerCreateVolume", create, &created))
	must.Eq(t, structs.ClientCSIControllerCreateVolumeResponse{ExternalVolumeID: "4", CapacityBytes: 1 << 20,
		VolumeContext: map[string]string{"name": "data"}}, created)
	var again structs.ClientCSIControllerCreateVolumeResponse
	must.NoError(t, callWire(t, c, "ClientCSI.ControllerCreateVolume", create, &again))
	must.Eq(t, created, again)

	var validated structs.ClientCSIControllerValidateVolumeResponse
	must.NoError(t, callWire(t, c, "ClientCSI.ControllerValidateVolume", &structs.ClientCSIControllerValidateVolumeRequest{
		PluginID: "mock", ExternalVolumeID: "4", Capabilities: fsWriter, Secrets: secrets}, &validated))
	must.True(t, validated.Confirmed, must.Sprint("the mock confirms what it is asked"))

	del := &structs.ClientCSIControllerDeleteVolumeRequest{PluginID: "mock", ExternalVolumeID: "4", Secrets: secrets}
	must.NoError(t, callWire(t, c, "ClientCSI.ControllerDeleteVolume", del, &structs.ClientCSIControllerDeleteVolumeResponse{}))
	must.NoError(t, callWire(t, c, "ClientCSI.ControllerDeleteVolume", del, &structs.ClientCSIControllerDeleteVolumeResponse{}),
		must.Sprint("already gone"))

	// A plugin error crosses the wire with its code and names the plugin,
	// the call and the volume.
	err := callWire(t, c, "ClientCSI.ControllerValidateVolume", &structs.ClientCSIControllerValidateVolumeRequest{
		PluginID: "mock", ExternalVolumeID: "99", Capabilities: fsWriter}, &validated)
	must.ErrorIs(t, err, structs.ErrNotFound)
	must.EqError(t, err, `volume "99" on node `+c.NodeID()+`: plugin "mock": ValidateVolumeCapabilities: NotFound: 99`)

	// The secrets survived msgpack and reached the plugin.
	log, err := os.ReadFile(p.LogPath)
	must.NoError(t, err)
	for _, m := range []string{"CreateVolume", "ValidateVolumeCapabilities", "DeleteVolume"} {
		must.StrContains(t, string(log), `/csi.v1.Controller/`+m+`","Request":{`)
	}
	must.Eq(t, 5, strings.Count(string(log), `"secrets":{"secretKey":"s3cr3t-value"}`))
}

func TestClientCSI_Controller_Hostpath(t *testing.T) {
	p := csitest.StartHostpath(t)
	c := newCSIClient(t, monolith("hostpath", p.Socket))
	e := &clientCSI{c: c}
	ctx := context.Background()

	create := &structs.ClientCSIControllerCreateVolumeRequest{PluginID: "hostpath", Name: "data", Capabilities: fsWriter,
		Parameters: map[string]string{"a": "1"}}
	var v structs.ClientCSIControllerCreateVolumeResponse
	must.NoError(t, e.ControllerCreateVolume(ctx, create, &v))
	must.StrHasPrefix(t, "vol-", v.ExternalVolumeID)

	validate := func(caps []*structs.CSIVolumeCapability) bool {
		var r structs.ClientCSIControllerValidateVolumeResponse
		must.NoError(t, e.ControllerValidateVolume(ctx, &structs.ClientCSIControllerValidateVolumeRequest{PluginID: "hostpath",
			ExternalVolumeID: v.ExternalVolumeID, Capabilities: caps}, &r))
		return r.Confirmed
	}
	must.True(t, validate(fsWriter))
	must.False(t, validate([]*structs.CSIVolumeCapability{{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter,
		AttachmentMode: structs.CSIVolumeAttachmentModeBlockDevice}}), must.Sprint("hostpath does not confirm block"))

	cases := []struct {
		name string
		req  *structs.ClientCSIControllerCreateVolumeRequest
		is   error
		msg  string
	}{
		{"same name, other parameters", &structs.ClientCSIControllerCreateVolumeRequest{PluginID: "hostpath", Name: "data",
			Capabilities: fsWriter, Parameters: map[string]string{"a": "2"}}, structs.ErrConflict, `plugin "hostpath": CreateVolume: AlreadyExists:`},
		{"missing snapshot", &structs.ClientCSIControllerCreateVolumeRequest{PluginID: "hostpath", Name: "restored",
			Capabilities: fsWriter, SnapshotID: "snap-gone"}, structs.ErrNotFound, `plugin "hostpath": CreateVolume: NotFound:`},
		{"no capabilities", &structs.ClientCSIControllerCreateVolumeRequest{PluginID: "hostpath", Name: "x"},
			structs.ErrBadRequest, `plugin "hostpath": CreateVolume: csi: invalid request`},
		{"block and file-system", &structs.ClientCSIControllerCreateVolumeRequest{PluginID: "hostpath", Name: "raw",
			Capabilities: append([]*structs.CSIVolumeCapability{{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter,
				AttachmentMode: structs.CSIVolumeAttachmentModeBlockDevice}}, fsWriter...)}, structs.ErrBadRequest,
			`plugin "hostpath": CreateVolume: InvalidArgument: CreateVolume "raw": volume_capabilities mix the block and mount access types`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := e.ControllerCreateVolume(ctx, tc.req, &structs.ClientCSIControllerCreateVolumeResponse{})
			must.ErrorIs(t, err, tc.is)
			must.StrContains(t, err.Error(), `volume "`+tc.req.Name+`" on node `+c.NodeID()+": "+tc.msg)
		})
	}

	del := &structs.ClientCSIControllerDeleteVolumeRequest{PluginID: "hostpath", ExternalVolumeID: v.ExternalVolumeID}
	must.NoError(t, e.ControllerDeleteVolume(ctx, del, nil))
	must.NoError(t, e.ControllerDeleteVolume(ctx, del, nil))
}

// TestClientCSI_Controller_HostpathExpandSnapshotsList drives expansion,
// snapshots and listings through the client's RPC server, as a server
// does: every reply crosses msgpack.
func TestClientCSI_Controller_HostpathExpandSnapshotsList(t *testing.T) {
	p := csitest.StartHostpath(t)
	c := newCSIClient(t, monolith("hostpath", p.Socket))
	node := c.NodeID()
	call := func(method string, args, reply any) error {
		t.Helper()
		return callWire(t, c, "ClientCSI."+method, args, reply)
	}

	var v structs.ClientCSIControllerCreateVolumeResponse
	must.NoError(t, call("ControllerCreateVolume", &structs.ClientCSIControllerCreateVolumeRequest{PluginID: "hostpath",
		Name: "data", CapacityMin: 1 << 20, Capabilities: fsWriter}, &v))
	must.Eq(t, int64(1<<20), v.CapacityBytes)

	t.Run("expand", func(t *testing.T) {
		expand := &structs.ClientCSIControllerExpandVolumeRequest{PluginID: "hostpath", NodeID: node,
			ExternalVolumeID: v.ExternalVolumeID, CapacityMin: 2 << 20, Capability: fsWriter[0]}
		var grown structs.ClientCSIControllerExpandVolumeResponse
		must.NoError(t, call("ControllerExpandVolume", expand, &grown))
		must.Eq(t, structs.ClientCSIControllerExpandVolumeResponse{CapacityBytes: 2 << 20, NodeExpansionRequired: true}, grown,
			must.Sprint("hostpath's node offers EXPAND_VOLUME: it asks for NodeExpandVolume"))

		expand.ExternalVolumeID = "vol-gone"
		err := call("ControllerExpandVolume", expand, &grown)
		must.ErrorIs(t, err, structs.ErrNotFound)
		must.StrHasPrefix(t, `volume "vol-gone" on node `+node+`: plugin "hostpath": ControllerExpandVolume: NotFound: `, err.Error())

		expand = &structs.ClientCSIControllerExpandVolumeRequest{PluginID: "hostpath", ExternalVolumeID: v.ExternalVolumeID}
		err = call("ControllerExpandVolume", expand, &grown)
		must.ErrorIs(t, err, structs.ErrBadRequest, must.Sprint("no capacity: refused before the call"))
		must.StrHasPrefix(t, `volume "`+v.ExternalVolumeID+`" on node `+node+`: plugin "hostpath": ControllerExpandVolume: csi: invalid request`, err.Error())
	})

	t.Run("validate unconfirmed", func(t *testing.T) {
		var r structs.ClientCSIControllerValidateVolumeResponse
		must.NoError(t, call("ControllerValidateVolume", &structs.ClientCSIControllerValidateVolumeRequest{PluginID: "hostpath",
			ExternalVolumeID: v.ExternalVolumeID, Capabilities: []*structs.CSIVolumeCapability{{
				AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeBlockDevice}}}, &r))
		must.Eq(t, structs.ClientCSIControllerValidateVolumeResponse{
			Message: "volume " + v.ExternalVolumeID + " is a directory (mount access type); it cannot be used as a block device"}, r)
	})

	t.Run("snapshots", func(t *testing.T) {
		create := func(name string) *structs.CSISnapshot {
			t.Helper()
			var r structs.ClientCSIControllerCreateSnapshotResponse
			must.NoError(t, call("ControllerCreateSnapshot", &structs.ClientCSIControllerCreateSnapshotRequest{PluginID: "hostpath",
				ExternalSourceVolumeID: v.ExternalVolumeID, Name: name}, &r))
			must.NotNil(t, r.Snapshot)
			return r.Snapshot
		}
		sn := create("snap")
		must.StrHasPrefix(t, "snap-", sn.ID)
		must.False(t, sn.CreateTime.IsZero())
		must.Eq(t, &structs.CSISnapshot{ID: sn.ID, PluginID: "hostpath", Name: "snap", ExternalSourceVolumeID: v.ExternalVolumeID,
			SizeBytes: 2 << 20, CreateTime: sn.CreateTime, IsReady: true}, sn, must.Sprint("the size after the expansion"))
		must.Eq(t, sn, create("snap"), must.Sprint("the name is the idempotency key"))
		other := create("other")
		must.NotEq(t, sn.ID, other.ID)

		// One snapshot a page: both, then no token. Listed snapshots
		// have no name.
		list := func(token string) *structs.ClientCSIControllerListSnapshotsResponse {
			t.Helper()
			var r structs.ClientCSIControllerListSnapshotsResponse
			must.NoError(t, call("ControllerListSnapshots", &structs.ClientCSIControllerListSnapshotsRequest{PluginID: "hostpath",
				MaxEntries: 1, StartingToken: token}, &r))
			return &r
		}
		first := list("")
		must.SliceLen(t, 1, first.Snapshots)
		must.NotEq(t, "", first.NextToken)
		second := list(first.NextToken)
		must.SliceLen(t, 1, second.Snapshots)
		must.Eq(t, "", second.NextToken)
		listed := map[string]*structs.CSISnapshot{first.Snapshots[0].ID: first.Snapshots[0], second.Snapshots[0].ID: second.Snapshots[0]}
		for _, want := range []*structs.CSISnapshot{sn, other} {
			unnamed := *want
			unnamed.Name = ""
			must.Eq(t, &unnamed, listed[want.ID])
		}

		del := &structs.ClientCSIControllerDeleteSnapshotRequest{PluginID: "hostpath", SnapshotID: sn.ID}
		must.NoError(t, call("ControllerDeleteSnapshot", del, &structs.ClientCSIControllerDeleteSnapshotResponse{}))
		must.NoError(t, call("ControllerDeleteSnapshot", del, &structs.ClientCSIControllerDeleteSnapshotResponse{}),
			must.Sprint("already gone"))
		rest := list("")
		must.SliceLen(t, 1, rest.Snapshots)
		must.Eq(t, other.ID, rest.Snapshots[0].ID)
		must.Eq(t, "", rest.NextToken)

		err := call("ControllerCreateSnapshot", &structs.ClientCSIControllerCreateSnapshotRequest{PluginID: "hostpath",
			ExternalSourceVolumeID: "vol-gone", Name: "lost"}, &structs.ClientCSIControllerCreateSnapshotResponse{})
		must.ErrorIs(t, err, structs.ErrNotFound)
		must.StrHasPrefix(t, `snapshot "lost" of volume "vol-gone" on node `+node+`: plugin "hostpath": CreateSnapshot: NotFound: `, err.Error())
		err = call("ControllerListSnapshots", &structs.ClientCSIControllerListSnapshotsRequest{PluginID: "hostpath",
			StartingToken: "stale"}, &structs.ClientCSIControllerListSnapshotsResponse{})
		must.ErrorIs(t, err, structs.ErrUnavailable, must.Sprint("ABORTED: list again"))
		must.StrHasPrefix(t, `snapshot list on node `+node+`: plugin "hostpath": ListSnapshots: Aborted: `, err.Error())
		err = call("ControllerDeleteSnapshot", &structs.ClientCSIControllerDeleteSnapshotRequest{SnapshotID: other.ID},
			&structs.ClientCSIControllerDeleteSnapshotResponse{})
		must.ErrorIs(t, err, structs.ErrBadRequest)
		must.EqError(t, err, `snapshot "`+other.ID+`": a plugin ID is required`)
	})

	t.Run("list volumes", func(t *testing.T) {
		var w structs.ClientCSIControllerCreateVolumeResponse
		must.NoError(t, call("ControllerCreateVolume", &structs.ClientCSIControllerCreateVolumeRequest{PluginID: "hostpath",
			Name: "more", CapacityMin: 3 << 20, Capabilities: fsWriter}, &w))
		want := map[string]int64{v.ExternalVolumeID: 2 << 20, w.ExternalVolumeID: 3 << 20}

		got := map[string]int64{}
		var token string
		for pages := 1; ; pages++ {
			var r structs.ClientCSIControllerListVolumesResponse
			must.NoError(t, call("ControllerListVolumes", &structs.ClientCSIControllerListVolumesRequest{PluginID: "hostpath",
				MaxEntries: 1, StartingToken: token}, &r))
			must.SliceLen(t, 1, r.Volumes)
			must.Eq(t, "", r.Volumes[0].VolumeID, must.Sprint("the client does not know berth's IDs"))
			got[r.Volumes[0].ExternalID] = r.Volumes[0].CapacityBytes
			if token = r.NextToken; token == "" {
				must.Eq(t, 2, pages)
				break
			}
			must.Less(t, 2, pages, must.Sprint("no more pages than volumes"))
		}
		must.Eq(t, want, got)

		// The controller's GET_VOLUME_HEALTH says each volume's condition:
		// normal, then abnormal once its directory is gone.
		condition := func(id string) *structs.CSIExternalVolume {
			var r structs.ClientCSIControllerListVolumesResponse
			must.NoError(t, call("ControllerListVolumes", &structs.ClientCSIControllerListVolumesRequest{PluginID: "hostpath"}, &r))
			for _, ev := range r.Volumes {
				if ev.ExternalID == id {
					return ev
				}
			}
			t.Fatalf("volume %s not listed", id)
			return nil
		}
		ev := condition(w.ExternalVolumeID)
		must.False(t, ev.IsAbnormal)
		must.Eq(t, "normal", ev.Status)
		dir := filepath.Join(p.Root, "volumes", w.ExternalVolumeID)
		must.NoError(t, os.Rename(dir, dir+".gone"))
		ev = condition(w.ExternalVolumeID)
		must.True(t, ev.IsAbnormal)
		must.StrContains(t, ev.Status, "INACCESSIBLE VolumeDirMissing")
		must.NoError(t, os.Rename(dir+".gone", dir))

		err := call("ControllerListVolumes", &structs.ClientCSIControllerListVolumesRequest{PluginID: "hostpath", MaxEntries: -1},
			&structs.ClientCSIControllerListVolumesResponse{})
		must.ErrorIs(t, err, structs.ErrBadRequest)
		must.StrHasPrefix(t, `volume list on node `+node+`: plugin "hostpath": ListVolumes: csi: invalid request`, err.Error())
	})
}

func TestClientCSI_Controller_Refusals(t *testing.T) {
	mock := csitest.StartMockDriver(t, csitest.MockOptions{Hooks: `createVolumeStart: |
  UNAVAILABLE;
`})
	split := csitest.StartMockDriver(t, csitest.MockOptions{ControllerSocket: true})
	gone := filepath.Join(t.TempDir(), "gone.sock")
	c := newCSIClient(t,
		monolith("unavailable", mock.Socket),
		monolith("gone", gone),
		&dynamicplugins.PluginInfo{ID: "node-only", Type: structs.CSIPluginTypeNode, Socket: split.Socket},
		// The node socket of a split plugin serves no controller: the
		// call succeeds only if it goes to the controller socket.
		&dynamicplugins.PluginInfo{ID: "split", Type: structs.CSIPluginTypeMonolith, Socket: split.Socket, ControllerSocket: split.ControllerSocket},
	)
	e := &clientCSI{c: c}
	node := c.NodeID()

	cases := []struct {
		name   string
		plugin string
		nodeID string
		is     error
		msg    string
	}{
		{"controller socket", "split", node, nil, ""},
		{"no plugin ID", "", "", structs.ErrBadRequest, `volume "v": a plugin ID is required`},
		{"another node", "split", "other-node", structs.ErrBadRequest, `volume "v": a call for node other-node reached node ` + node},
		{"unknown plugin", "nope", "", structs.ErrUnavailable, `volume "v": plugin "nope" is not running on node ` + node},
		{"node instance only", "node-only", "", structs.ErrBadRequest,
			`volume "v": plugin "node-only" runs only a node instance on node ` + node + `, not a controller`},
		{"plugin unavailable", "unavailable", "", structs.ErrUnavailable,
			`volume "v" on node ` + node + `: plugin "unavailable": CreateVolume: Unavailable: `},
		{"socket gone", "gone", "", structs.ErrUnavailable,
			`volume "v" on node ` + node + `: plugin "gone": dial: csi: no socket at the plugin's path`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var reply structs.ClientCSIControllerCreateVolumeResponse
			err := e.ControllerCreateVolume(context.Background(), &structs.ClientCSIControllerCreateVolumeRequest{
				PluginID: tc.plugin, NodeID: tc.nodeID, Name: "v", Capabilities: fsWriter}, &reply)
			if tc.is == nil {
				must.NoError(t, err)
				must.NotEq(t, "", reply.ExternalVolumeID)
				return
			}
			must.ErrorIs(t, err, tc.is)
			var se *structs.Error
			must.True(t, errors.As(err, &se))
			must.StrHasPrefix(t, tc.msg, err.Error())
		})
	}
}

func TestClientCSI_Controller_OneCallPerPlugin(t *testing.T) {
	slow := csitest.StartMockDriver(t, csitest.MockOptions{})
	other := csitest.StartMockDriver(t, csitest.MockOptions{})
	c := newCSIClient(t, monolith("slow", slow.Socket), monolith("other", other.Socket))
	e := &clientCSI{c: c}
	create := func(ctx context.Context, plugin, name string) error {
		return e.ControllerCreateVolume(ctx, &structs.ClientCSIControllerCreateVolumeRequest{
			PluginID: plugin, Name: name, Capabilities: fsWriter}, &structs.ClientCSIControllerCreateVolumeResponse{})
	}
	holders := func(plugin string) int {
		held, _ := e.sems.Usage(plugin)
		return held
	}

	// A hung plugin holds its one turn...
	slow.Pause()
	ctxA, cancelA := context.WithCancel(context.Background())
	errA := make(chan error, 1)
	go func() { errA <- create(ctxA, "slow", "a") }()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return holders("slow") == 1 }),
		wait.Timeout(10*time.Second), wait.Gap(5*time.Millisecond)))

	// ...so a second call to it waits, and gives up with its context...
	ctxB, cancelB := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelB()
	err := create(ctxB, "slow", "b")
	must.ErrorIs(t, err, structs.ErrUnavailable)
	must.StrContains(t, err.Error(), `volume "b": waiting for plugin "slow" on node `+c.NodeID())
	// ...while another plugin's calls go ahead.
	must.NoError(t, create(context.Background(), "other", "c"))

	cancelA()
	err = <-errA
	must.ErrorIs(t, err, structs.ErrUnavailable, must.Sprint("cut short: the server may retry"))
	slow.Resume()
	must.NoError(t, create(context.Background(), "slow", "b"))

	must.Zero(t, e.sems.Len(), must.Sprint("no turn is left behind"))
}

func TestControllerError_Codes(t *testing.T) {
	grpcErr := func(code csi.Code) error {
		return &csi.Error{Plugin: "p", Call: "CreateVolume", Code: code, GRPC: true, Message: "said so"}
	}
	cases := []struct {
		err  error
		want structs.ErrorCode
	}{
		{grpcErr(csi.CodeInvalidArgument), structs.CodeBadRequest},
		{grpcErr(csi.CodeOutOfRange), structs.CodeBadRequest},
		{grpcErr(csi.CodeUnimplemented), structs.CodeBadRequest},
		{grpcErr(csi.CodeNotFound), structs.CodeNotFound},
		{grpcErr(csi.CodeAlreadyExists), structs.CodeConflict},
		{grpcErr(csi.CodeFailedPrecondition), structs.CodeConflict},
		{grpcErr(csi.CodePermissionDenied), structs.CodePermissionDenied},
		{grpcErr(csi.CodeUnauthenticated), structs.CodePermissionDenied},
		{grpcErr(csi.CodeInternal), structs.CodeInternal},
		{grpcErr(csi.CodeUnknown), structs.CodeInternal},
		{grpcErr(csi.CodeResourceExhausted), structs.CodeUnavailable},
		{grpcErr(csi.CodeAborted), structs.CodeUnavailable},
		{grpcErr(csi.CodeDeadlineExceeded), structs.CodeUnavailable},
		{grpcErr(csi.CodeUnavailable), structs.CodeUnavailable},
		{fmt.Errorf("%w: x", csi.ErrInvalidRequest), structs.CodeBadRequest},
		{fmt.Errorf("%w: x", csi.ErrCapabilityMismatch), structs.CodeBadRequest},
		{fmt.Errorf("%w: x", csi.ErrInvalidResponse), structs.CodeInternal},
		{fmt.Errorf("%w: x", csi.ErrNoSocket), structs.CodeUnavailable},
		{context.Canceled, structs.CodeUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			err := controllerError(tc.err, "n1", volumeNamed("vol"))
			must.Eq(t, tc.want, structs.ErrorCodeOf(err))
			must.StrHasPrefix(t, `volume "vol" on node n1: `, err.Error())
		})
	}
}

func TestClientCSI_Controller_ConfiguredConcurrency(t *testing.T) {
	slow := csitest.StartMockDriver(t, csitest.MockOptions{})
	c := newCSIClient(t, monolith("slow", slow.Socket))
	e := &clientCSI{c: c, sems: keyedsem.Semaphores[string]{Limit: 2}}
	slow.Pause()
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 3)
	for _, name := range []string{"a", "b", "c"} {
		go func() {
			errs <- e.ControllerCreateVolume(ctx, &structs.ClientCSIControllerCreateVolumeRequest{
				PluginID: "slow", Name: name, Capabilities: fsWriter}, &structs.ClientCSIControllerCreateVolumeResponse{})
		}()
	}
	// Two calls hold turns and the third waits behind them.
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		held, users := e.sems.Usage("slow")
		return held == 2 && users == 3
	}), wait.Timeout(10*time.Second), wait.Gap(5*time.Millisecond)))
	cancel()
	for range 3 {
		must.ErrorIs(t, <-errs, structs.ErrUnavailable)
	}
	slow.Resume()
}

// TestClientCSI_Controller_OneCallPerVolume: with turns to spare, a second
// call about the same volume still waits for the first (the CSI spec's
// one call in flight per volume) while a call about another volume goes
// ahead; every call goes over the plugin's one pooled connection.
func TestClientCSI_Controller_OneCallPerVolume(t *testing.T) {
	slow := csitest.StartMockDriver(t, csitest.MockOptions{})
	c := newCSIClient(t, monolith("slow", slow.Socket))
	e := &clientCSI{c: c, sems: keyedsem.Semaphores[string]{Limit: 4}}
	create := func(ctx context.Context, name string) error {
		return e.ControllerCreateVolume(ctx, &structs.ClientCSIControllerCreateVolumeRequest{
			PluginID: "slow", Name: name, Capabilities: fsWriter}, &structs.ClientCSIControllerCreateVolumeResponse{})
	}
	must.NoError(t, create(context.Background(), "warm-up"))

	slow.Pause()
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 3)
	for _, name := range []string{"a", "a", "b"} {
		go func() { errs <- create(ctx, name) }()
	}
	// "a" and "b" hold plugin turns; the second "a" waits for the first.
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		held, _ := e.sems.Usage("slow")
		_, aUsers := e.objects.Usage("slow\x00" + volumeNamed("a"))
		return held == 2 && aUsers == 2
	}), wait.Timeout(10*time.Second), wait.Gap(5*time.Millisecond)))
	cancel()
	for range 3 {
		must.ErrorIs(t, <-errs, structs.ErrUnavailable)
	}
	slow.Resume()
	must.NoError(t, create(context.Background(), "a"))
	must.EqOp(t, 1, c.csiConns.Len(), must.Sprint("one connection to the plugin for every call"))
	must.Zero(t, e.objects.Len(), must.Sprint("no per-volume turn is left behind"))
}

// TestClientCSI_Controller_AttachWaitsForDetach: an attach and a detach of
// one volume (to different nodes, so their messages differ) take turns,
// as the CSI spec asks; a listing takes no volume's turn.
func TestClientCSI_Controller_AttachWaitsForDetach(t *testing.T) {
	slow := csitest.StartMockDriver(t, csitest.MockOptions{})
	c := newCSIClient(t, monolith("slow", slow.Socket))
	e := &clientCSI{c: c, sems: keyedsem.Semaphores[string]{Limit: 4}}
	slow.Pause()
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 3)
	go func() {
		errs <- e.ControllerAttachVolume(ctx, &structs.ClientCSIControllerAttachVolumeRequest{PluginID: "slow",
			ExternalVolumeID: "v", ExternalNodeID: "node-a", Capability: fsWriter[0]}, &structs.ClientCSIControllerAttachVolumeResponse{})
	}()
	go func() {
		errs <- e.ControllerDetachVolume(ctx, &structs.ClientCSIControllerDetachVolumeRequest{PluginID: "slow",
			ExternalVolumeID: "v", ExternalNodeID: "node-b"}, &structs.ClientCSIControllerDetachVolumeResponse{})
	}()
	go func() {
		errs <- e.ControllerListVolumes(ctx, &structs.ClientCSIControllerListVolumesRequest{PluginID: "slow"},
			&structs.ClientCSIControllerListVolumesResponse{})
	}()
	// The listing and one of the two hold plugin turns; the other waits
	// for the volume's.
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		held, _ := e.sems.Usage("slow")
		_, vUsers := e.objects.Usage("slow\x00" + volumeNamed("v"))
		return held == 2 && vUsers == 2 && e.objects.Len() == 1
	}), wait.Timeout(10*time.Second), wait.Gap(5*time.Millisecond)))
	cancel()
	for range 3 {
		must.ErrorIs(t, <-errs, structs.ErrUnavailable)
	}
	slow.Resume()
}

func TestClientCSI_ControllerAttachDetach_MockDriverOverTheWire(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5", "-attach-limit=1"}})
	c := newCSIClient(t, monolith("mock", p.Socket))
	node, plugNode := c.NodeID(), csitest.DefaultMockName
	secrets := structs.CSISecrets{"secretKey": "s3cr3t-value"}
	attach := func(vol, extNode string, readOnly bool) (*structs.ClientCSIControllerAttachVolumeResponse, error) {
		var reply structs.ClientCSIControllerAttachVolumeResponse
		err := callWire(t, c, "ClientCSI.ControllerAttachVolume", &structs.ClientCSIControllerAttachVolumeRequest{PluginID: "mock",
			NodeID: node, ExternalVolumeID: vol, ExternalNodeID: extNode, Capability: fsWriter[0], ReadOnly: readOnly,
			MountOptions: &structs.CSIMountOptions{FSType: "ext4"}, Secrets: secrets, VolumeContext: map[string]string{"vc": "1"}}, &reply)
		return &reply, err
	}
	detach := func(vol, extNode string) error {
		return callWire(t, c, "ClientCSI.ControllerDetachVolume", &structs.ClientCSIControllerDetachVolumeRequest{PluginID: "mock",
			NodeID: node, ExternalVolumeID: vol, ExternalNodeID: extNode, Secrets: secrets}, &structs.ClientCSIControllerDetachVolumeResponse{})
	}

	got, err := attach("1", plugNode, false)
	must.NoError(t, err)
	must.Eq(t, map[string]string{"device": "/dev/mock", "readonly": "false"}, got.PublishContext)
	again, err := attach("1", plugNode, false)
	must.NoError(t, err)
	must.Eq(t, got, again, must.Sprint("attached already: the same answer"))

	cases := []struct {
		name, vol, extNode string
		readOnly           bool
		is                 error
		msg                string
	}{
		{"node at its limit", "2", plugNode, false, structs.ErrUnavailable,
			`attach of volume "2" to plugin node "mock.csi.test" on node ` + node + `: plugin "mock": ControllerPublishVolume: ResourceExhausted: `},
		{"unknown plugin node", "1", "elsewhere", false, structs.ErrNotFound,
			`attach of volume "1" to plugin node "elsewhere" on node ` + node + `: plugin "mock": ControllerPublishVolume: NotFound: `},
		{"readonly differs", "1", plugNode, true, structs.ErrConflict, `plugin "mock": ControllerPublishVolume: AlreadyExists: `},
		{"no plugin node", "1", "", false, structs.ErrBadRequest, `plugin "mock": ControllerPublishVolume: csi: invalid request: `},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := attach(tc.vol, tc.extNode, tc.readOnly)
			must.ErrorIs(t, err, tc.is)
			must.StrContains(t, err.Error(), tc.msg)
		})
	}

	must.NoError(t, detach("1", plugNode))
	must.NoError(t, detach("1", plugNode), must.Sprint("not attached: detached"))
	must.NoError(t, detach("99", plugNode), must.Sprint("an unknown volume is detached"))
	err = detach("1", "")
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.StrHasPrefix(t, `detach of volume "1" from plugin node "" on node `+node+`: plugin "mock": ControllerUnpublishVolume: csi: invalid request: `, err.Error())
	_, err = attach("2", plugNode, false)
	must.NoError(t, err, must.Sprint("volume 1 is detached: there is room for volume 2"))

	// The secrets and the volume context survived msgpack and reached the plugin.
	log, err := os.ReadFile(p.LogPath)
	must.NoError(t, err)
	must.Eq(t, 9, strings.Count(string(log), `"secrets":{"secretKey":"s3cr3t-value"}`), must.Sprint("every call that was sent"))
	must.StrContains(t, string(log), `"volume_context":{"vc":"1"}`)
}

func TestClientCSI_NodeDetachVolume_OverTheWire(t *testing.T) {
	// The first unstage fails finally.
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}, Hooks: `globals: |
  unstages = 0;
nodeUnstageVolumeStart: |
  unstages = unstages + 1;
  if (unstages == 1) { INTERNAL; } else { OK; };
`})
	c := newCSIClient(t, monolith("mock", p.Socket))
	node := c.NodeID()
	ctx := context.Background()
	mount := func(alloc string) {
		t.Helper()
		_, err := c.Volumes().MountVolume(ctx, &volumemanager.MountRequest{AllocID: alloc, VolumeID: "data", ExternalVolumeID: "1",
			PluginID: "mock", AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter,
			AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem, PublishContext: map[string]string{"device": "/dev/mock"}})
		must.NoError(t, err)
	}
	detach := func(nodeID, alloc, ext string) error {
		return callWire(t, c, "ClientCSI.NodeDetachVolume", &structs.ClientCSINodeDetachVolumeRequest{PluginID: "mock", NodeID: nodeID,
			AllocID: alloc, VolumeID: "data", ExternalVolumeID: ext, AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter,
			AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}, &structs.ClientCSINodeDetachVolumeResponse{})
	}
	calls := func(method string) int {
		b, err := os.ReadFile(p.LogPath)
		must.NoError(t, err)
		return strings.Count(string(b), `"Method":"/csi.v1.Node/`+method+`"`)
	}

	mount("a1")
	mount("a2")
	must.NoError(t, detach(node, "a1", "1"))
	must.Eq(t, 1, calls("NodeUnpublishVolume"))
	must.Eq(t, 0, calls("NodeUnstageVolume"), must.Sprint("a2 still uses it"))

	err := detach("other-node", "a2", "1")
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.EqError(t, err, `volume "data" for alloc a2: a detach from node other-node reached node `+node)
	err = detach("", "a2", "1")
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.EqError(t, err, `volume "data" for alloc a2: the claiming node's ID is required (this is node `+node+`)`)
	must.NoError(t, detach(node, "a2", "2"), must.Sprint("external volume 2 was never attached here"))
	must.Eq(t, 1, calls("NodeUnpublishVolume"), must.Sprint("and volume 1 is left alone"))

	// The last alloc's detach unstages; a final failure crosses the wire
	// with its code, and asking again finishes it.
	err = detach(node, "a2", "1")
	must.ErrorIs(t, err, structs.ErrInternal)
	must.StrHasPrefix(t, `node `+node+`: volume "data" for alloc a2: NodeUnstageVolume with plugin "mock": Internal: `, err.Error())
	must.NoError(t, detach(node, "a2", "1"))
	must.Eq(t, 2, calls("NodeUnstageVolume"))
	must.NoError(t, detach(node, "a2", "1"), must.Sprint("detached already"))
	must.NoError(t, detach(node, "a9", ""), must.Sprint("never attached here"))
	must.Eq(t, 2, calls("NodeUnpublishVolume"))

	err = callWire(t, c, "ClientCSI.NodeDetachVolume", &structs.ClientCSINodeDetachVolumeRequest{NodeID: node, AllocID: "a1", VolumeID: "data"},
		&structs.ClientCSINodeDetachVolumeResponse{})
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.StrContains(t, err.Error(), "the plugin ID is required")

	// A plugin that is not running cannot detach yet: the server retries.
	mount("a3")
	must.NoError(t, c.Registry().Deregister("mock", ""))
	err = detach(node, "a3", "1")
	must.ErrorIs(t, err, structs.ErrUnavailable)
	must.EqError(t, err, `node `+node+`: volume "data" for alloc a3: find plugin with plugin "mock": volumemanager: plugin not running on this node`)
	must.NoError(t, c.Registry().Register(monolith("mock", p.Socket)))
	must.NoError(t, detach(node, "a3", "1"))
}

func TestClientCSI_NodeDetachVolume_Unavailable(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{Hooks: `nodeUnpublishVolumeStart: |
  UNAVAILABLE;
`})
	c := newCSIClient(t, monolith("mock", p.Socket))
	// Retry quickly: the plugin never stops answering UNAVAILABLE.
	var err error
	c.volumes, err = volumemanager.New(volumemanager.Config{DataDir: c.config.DataDir, Registry: c.registry,
		Logger: c.logger, Retry: backoff.Policy{Initial: time.Millisecond, Max: time.Millisecond, MaxAttempts: 2}})
	must.NoError(t, err)
	_, err = c.Volumes().MountVolume(context.Background(), &volumemanager.MountRequest{AllocID: "a1", VolumeID: "data",
		ExternalVolumeID: "1", PluginID: "mock", AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter,
		AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem, PublishContext: map[string]string{"device": "/dev/mock"}})
	must.NoError(t, err)

	err = callWire(t, c, "ClientCSI.NodeDetachVolume", &structs.ClientCSINodeDetachVolumeRequest{PluginID: "mock", NodeID: c.NodeID(),
		AllocID: "a1", VolumeID: "data", ExternalVolumeID: "1"}, &structs.ClientCSINodeDetachVolumeResponse{})
	must.ErrorIs(t, err, structs.ErrUnavailable, must.Sprint("the unpublish may be in progress: retry"))
	must.StrHasPrefix(t, `node `+c.NodeID()+`: volume "data" for alloc a1: NodeUnpublishVolume with plugin "mock": Unavailable: `, err.Error())
}

func TestNodeError_Codes(t *testing.T) {
	csiErr := &csi.Error{Plugin: "p", Call: "NodeUnstageVolume", Code: csi.CodeNotFound, GRPC: true, Message: "gone"}
	cases := []struct {
		name string
		err  error
		want structs.ErrorCode
	}{
		{"invalid", fmt.Errorf("v: %w: x", volumemanager.ErrInvalidRequest), structs.CodeBadRequest},
		{"conflict", &volumemanager.Error{Err: fmt.Errorf("%w: x", volumemanager.ErrConflict)}, structs.CodeConflict},
		{"plugin not running", &volumemanager.Error{Err: volumemanager.ErrPluginNotRunning}, structs.CodeUnavailable},
		{"final csi error", &volumemanager.Error{Err: csiErr}, structs.CodeNotFound},
		{"csi error not final", &volumemanager.Error{Err: &csi.Error{Code: csi.CodeAborted, GRPC: true}}, structs.CodeUnavailable},
		{"local failure", &volumemanager.Error{Step: "record usage", Err: os.ErrPermission}, structs.CodeUnavailable},
		{"cut short", &volumemanager.Error{Err: context.Canceled}, structs.CodeUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := nodeError(tc.err, "n1")
			must.Eq(t, tc.want, structs.ErrorCodeOf(err))
			must.StrHasPrefix(t, "node n1: ", err.Error())
		})
	}
}
