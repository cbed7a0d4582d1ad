package csi

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/structs"
)

func fsCaps(modes ...structs.CSIVolumeAccessMode) []*structs.CSIVolumeCapability {
	out := make([]*structs.CSIVolumeCapability, len(modes))
	for i, m := range modes {
		out[i] = &structs.CSIVolumeCapability{AccessMode: m, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}
	}
	return out
}

var (
	writer = fsCaps(structs.CSIVolumeAccessModeSingleNodeWriter)
	block  = []*structs.CSIVolumeCapability{{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter,
		AttachmentMode: structs.CSIVolumeAttachmentModeBlockDevice}}
)

// mockCalls returns the gRPCCall lines the mock driver (run with -v=5)
// logged for method, e.g. "CreateVolume": what it received and answered.
func mockCalls(t *testing.T, p *csitest.Plugin, method string) []string {
	t.Helper()
	b, err := os.ReadFile(p.LogPath)
	must.NoError(t, err)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "gRPCCall:") && strings.Contains(l, "/"+method+`"`) {
			out = append(out, l)
		}
	}
	return out
}

func TestClient_CreateVolume_MockDriver(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-enable-topology", "-v=5"}})
	c := dial(t, p.Socket)
	ctx := context.Background()

	req := &CreateVolumeRequest{Name: "data", CapacityMin: 1 << 20, Capabilities: writer,
		Parameters:         map[string]string{"class": "fast"},
		RequiredTopologies: []*structs.CSITopology{{Segments: map[string]string{"zone": "a"}}}}
	v, err := c.CreateVolume(ctx, req)
	must.NoError(t, err)
	must.Eq(t, &CreateVolumeResponse{
		ExternalVolumeID: "4", // the mock starts with volumes 1 to 3
		CapacityBytes:    1 << 20,
		VolumeContext:    map[string]string{"name": "data"},
		Topologies:       []*structs.CSITopology{{Segments: map[string]string{"io.kubernetes.storage.mock/node": "some-mock-node"}}},
	}, v)
	calls := mockCalls(t, p, "CreateVolume")
	must.SliceLen(t, 1, calls)
	must.StrContains(t, calls[0], `"accessibility_requirements":{"requisite":[{"segments":{"zone":"a"}}]}`)
	must.StrContains(t, calls[0], `"parameters":{"class":"fast"}`)
	must.StrContains(t, calls[0], `"capacity_range":{"required_bytes":1048576}`)

	again, err := c.CreateVolume(ctx, req)
	must.NoError(t, err)
	must.Eq(t, v, again, must.Sprint("the name is the idempotency key"))

	fromSnap, err := c.CreateVolume(ctx, &CreateVolumeRequest{Name: "from-snap", SnapshotID: "1", Capabilities: writer})
	must.NoError(t, err)
	must.Eq(t, "5", fromSnap.ExternalVolumeID)
	clone, err := c.CreateVolume(ctx, &CreateVolumeRequest{Name: "clone", CloneID: "2", Capabilities: writer})
	must.NoError(t, err)
	must.Eq(t, "6", clone.ExternalVolumeID)
	calls = mockCalls(t, p, "CreateVolume")
	must.StrContains(t, calls[len(calls)-2], `"snapshot_id":"1"`)
	must.StrContains(t, calls[len(calls)-1], `"volume_id":"2"`)

	_, err = c.CreateVolume(ctx, &CreateVolumeRequest{Name: "lost", SnapshotID: "99", Capabilities: writer})
	must.Eq(t, CodeNotFound, CodeOf(err))
	must.True(t, IsFinal(err))
	must.StrHasPrefix(t, `plugin "mock": CreateVolume: NotFound: `, err.Error())
}

func TestClient_CreateVolume_InvalidRequest(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}})
	c := dial(t, p.Socket)
	cases := []struct {
		name string
		req  *CreateVolumeRequest
	}{
		{"nil", nil},
		{"no name", &CreateVolumeRequest{Capabilities: writer}},
		{"no capabilities", &CreateVolumeRequest{Name: "v"}},
		{"unknown access mode", &CreateVolumeRequest{Name: "v", Capabilities: fsCaps("everyone")}},
		{"negative capacity", &CreateVolumeRequest{Name: "v", Capabilities: writer, CapacityMin: -1}},
		{"min above max", &CreateVolumeRequest{Name: "v", Capabilities: writer, CapacityMin: 2, CapacityMax: 1}},
		{"two sources", &CreateVolumeRequest{Name: "v", Capabilities: writer, SnapshotID: "1", CloneID: "1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.CreateVolume(context.Background(), tc.req)
			must.ErrorIs(t, err, ErrInvalidRequest)
			must.True(t, IsFinal(err))
			must.StrHasPrefix(t, `plugin "mock": CreateVolume: csi: invalid request: `, err.Error())
		})
	}
	must.SliceEmpty(t, mockCalls(t, p, "CreateVolume"), must.Sprint("no invalid request reached the plugin"))
}

func TestClient_DeleteVolume_MockDriver(t *testing.T) {
	// The mock answers OK for a volume it does not know; a hook makes it
	// answer NOT_FOUND once (as other plugins do), then UNAVAILABLE once.
	p := csitest.StartMockDriver(t, csitest.MockOptions{Hooks: `globals: |
  deletes = 0;
deleteVolumeStart: |
  deletes = deletes + 1;
  if (deletes == 3) { NOTFOUND; } else if (deletes == 4) { UNAVAILABLE; } else { OK; };
`})
	c := dial(t, p.Socket)
	ctx := context.Background()

	must.NoError(t, c.DeleteVolume(ctx, "1", nil))
	must.NoError(t, c.DeleteVolume(ctx, "1", nil), must.Sprint("already gone: OK"))
	must.NoError(t, c.DeleteVolume(ctx, "2", nil), must.Sprint("NOT_FOUND: already gone"))
	err := c.DeleteVolume(ctx, "2", nil)
	must.Eq(t, CodeUnavailable, CodeOf(err))
	must.False(t, IsFinal(err))
	must.NoError(t, c.DeleteVolume(ctx, "2", nil))

	err = c.DeleteVolume(ctx, "", nil)
	must.ErrorIs(t, err, ErrInvalidRequest)
}

func TestClient_ValidateVolumeCapabilities_MockDriver(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	c := dial(t, p.Socket)
	ctx := context.Background()

	// The mock confirms whatever it is asked, for a volume it knows.
	for _, caps := range [][]*structs.CSIVolumeCapability{writer, block,
		fsCaps(structs.CSIVolumeAccessModeMultiNodeReader, structs.CSIVolumeAccessModeMultiNodeMultiWriter)} {
		r, err := c.ValidateVolumeCapabilities(ctx, &ValidateRequest{ExternalVolumeID: "1", Capabilities: caps,
			MountOptions: &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"noatime"}}})
		must.NoError(t, err)
		must.Eq(t, &ValidateResponse{Confirmed: true}, r)
	}

	r, err := c.ValidateVolumeCapabilities(ctx, &ValidateRequest{ExternalVolumeID: "99", Capabilities: writer})
	must.Nil(t, r)
	must.Eq(t, CodeNotFound, CodeOf(err))
	must.StrHasPrefix(t, `plugin "mock": ValidateVolumeCapabilities: NotFound: 99`, err.Error())

	_, err = c.ValidateVolumeCapabilities(ctx, &ValidateRequest{ExternalVolumeID: "1"})
	must.ErrorIs(t, err, ErrInvalidRequest)
	_, err = c.ValidateVolumeCapabilities(ctx, &ValidateRequest{Capabilities: writer})
	must.ErrorIs(t, err, ErrInvalidRequest)
}

func TestClient_Controller_Hostpath(t *testing.T) {
	p := csitest.StartHostpath(t)
	c := dial(t, p.Socket)
	ctx := context.Background()

	// Create twice with the same name: one volume. Hostpath ignores secrets.
	req := &CreateVolumeRequest{Name: "data", CapacityMin: 1 << 20, Capabilities: writer,
		Parameters: map[string]string{"a": "1"}, Secrets: structs.CSISecrets{"token": "unused"}}
	v, err := c.CreateVolume(ctx, req)
	must.NoError(t, err)
	must.StrHasPrefix(t, "vol-", v.ExternalVolumeID)
	must.Eq(t, int64(1<<20), v.CapacityBytes)
	again, err := c.CreateVolume(ctx, req)
	must.NoError(t, err)
	must.Eq(t, v, again)

	// The same name with other parameters is another volume: ALREADY_EXISTS.
	_, err = c.CreateVolume(ctx, &CreateVolumeRequest{Name: "data", Capabilities: writer, Parameters: map[string]string{"a": "2"}})
	must.Eq(t, CodeAlreadyExists, CodeOf(err))
	must.True(t, IsFinal(err))
	// A volume is a directory or a block device, not both.
	_, err = c.CreateVolume(ctx, &CreateVolumeRequest{Name: "raw", Capabilities: append(slices.Clone(block), writer...)})
	must.Eq(t, CodeInvalidArgument, CodeOf(err))

	t.Run("validate", func(t *testing.T) {
		// Hostpath confirms the mount access type with any access mode
		// and bind-mount flags, echoing what it was asked...
		r, err := c.ValidateVolumeCapabilities(ctx, &ValidateRequest{ExternalVolumeID: v.ExternalVolumeID,
			Capabilities: fsCaps(structs.CSIVolumeAccessModeSingleNodeWriter, structs.CSIVolumeAccessModeMultiNodeReader),
			MountOptions: &structs.CSIMountOptions{MountFlags: []string{"ro", "noexec"}}, Parameters: map[string]string{"a": "1"}})
		must.NoError(t, err)
		must.Eq(t, &ValidateResponse{Confirmed: true}, r)
		// ...and leaves confirmed unset, with a message, for block, other
		// parameters and flags a bind mount cannot apply.
		for _, tc := range []struct {
			req *ValidateRequest
			msg string
		}{
			{&ValidateRequest{Capabilities: block}, "is a directory (mount access type); it cannot be used as a block device"},
			{&ValidateRequest{Capabilities: writer, Parameters: map[string]string{"a": "2"}}, "parameters differ"},
			{&ValidateRequest{Capabilities: writer, MountOptions: &structs.CSIMountOptions{MountFlags: []string{"password=x"}}},
				"mount flag 1 of 1 is not supported"},
		} {
			tc.req.ExternalVolumeID = v.ExternalVolumeID
			r, err := c.ValidateVolumeCapabilities(ctx, tc.req)
			must.NoError(t, err)
			must.False(t, r.Confirmed)
			must.StrContains(t, r.Message, tc.msg)
		}
		_, err = c.ValidateVolumeCapabilities(ctx, &ValidateRequest{ExternalVolumeID: "vol-gone", Capabilities: writer})
		must.Eq(t, CodeNotFound, CodeOf(err))
	})

	t.Run("snapshots", func(t *testing.T) {
		sn, err := c.CreateSnapshot(ctx, &CreateSnapshotRequest{SourceVolumeID: v.ExternalVolumeID, Name: "snap"})
		must.NoError(t, err)
		must.StrHasPrefix(t, "snap-", sn.ID)
		must.Eq(t, v.ExternalVolumeID, sn.SourceVolumeID)
		must.True(t, sn.ReadyToUse)
		must.False(t, sn.CreateTime.IsZero())
		snAgain, err := c.CreateSnapshot(ctx, &CreateSnapshotRequest{SourceVolumeID: v.ExternalVolumeID, Name: "snap"})
		must.NoError(t, err)
		must.Eq(t, sn.ID, snAgain.ID)

		list, err := c.ListSnapshots(ctx, &ListSnapshotsRequest{SourceVolumeID: v.ExternalVolumeID})
		must.NoError(t, err)
		must.SliceLen(t, 1, list.Snapshots)
		must.Eq(t, sn, list.Snapshots[0])

		restored, err := c.CreateVolume(ctx, &CreateVolumeRequest{Name: "restored", SnapshotID: sn.ID, Capabilities: writer})
		must.NoError(t, err)
		must.NotEq(t, v.ExternalVolumeID, restored.ExternalVolumeID)
		must.Eq(t, v.CapacityBytes, restored.CapacityBytes, must.Sprint("at least the source's size"))
		clone, err := c.CreateVolume(ctx, &CreateVolumeRequest{Name: "clone", CloneID: v.ExternalVolumeID, Capabilities: writer})
		must.NoError(t, err)
		must.NotEq(t, restored.ExternalVolumeID, clone.ExternalVolumeID)

		_, err = c.CreateVolume(ctx, &CreateVolumeRequest{Name: "lost", SnapshotID: "snap-gone", Capabilities: writer})
		must.Eq(t, CodeNotFound, CodeOf(err))

		must.NoError(t, c.DeleteSnapshot(ctx, sn.ID, nil))
		must.NoError(t, c.DeleteSnapshot(ctx, sn.ID, nil), must.Sprint("already gone"))
		list, err = c.ListSnapshots(ctx, nil)
		must.NoError(t, err)
		must.SliceEmpty(t, list.Snapshots)
		for _, id := range []string{restored.ExternalVolumeID, clone.ExternalVolumeID} {
			must.NoError(t, c.DeleteVolume(ctx, id, nil))
		}
	})

	must.NoError(t, c.DeleteVolume(ctx, v.ExternalVolumeID, nil))
	must.NoError(t, c.DeleteVolume(ctx, v.ExternalVolumeID, nil), must.Sprint("delete twice"))
	r, err := c.ValidateVolumeCapabilities(ctx, &ValidateRequest{ExternalVolumeID: v.ExternalVolumeID, Capabilities: writer})
	must.Nil(t, r)
	must.Eq(t, CodeNotFound, CodeOf(err))
}

// TestClient_Controller_SecretsReachThePluginNotTheLog sends secrets and a
// credential in a mount flag with every controller call. The mock driver
// (at -v=5) logs what it received, which shows they arrived; the client's
// own log, at trace, must show neither.
//
// The mock's CSI_ENABLE_CREDS=true does not work in v4.2.0: its
// setDefaultCreds assigns the credentials to its parameter, not to the
// driver, so calls without secrets still pass. TestClient_Controller_Fake
// shows a plugin that requires them.
func TestClient_Controller_SecretsReachThePluginNotTheLog(t *testing.T) {
	const secret, flagSecret = "s3cr3t-value", "hunter2-flag"
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}, Env: []string{"CSI_ENABLE_CREDS=true"}})
	var buf bytes.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: &buf})
	c, err := Dial(context.Background(), p.Socket, logger, WithPluginID("secretive"))
	must.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	secrets := structs.CSISecrets{"secretKey": secret}
	mo := &structs.CSIMountOptions{FSType: "cifs", MountFlags: []string{"password=" + flagSecret}}

	v, err := c.CreateVolume(ctx, &CreateVolumeRequest{Name: "v", Capabilities: writer, MountOptions: mo, Secrets: secrets})
	must.NoError(t, err)
	r, err := c.ValidateVolumeCapabilities(ctx, &ValidateRequest{ExternalVolumeID: v.ExternalVolumeID,
		Capabilities: writer, MountOptions: mo, Secrets: secrets})
	must.NoError(t, err)
	must.True(t, r.Confirmed)
	sn, err := c.CreateSnapshot(ctx, &CreateSnapshotRequest{SourceVolumeID: v.ExternalVolumeID, Name: "s", Secrets: secrets})
	must.NoError(t, err)
	_, err = c.ListSnapshots(ctx, &ListSnapshotsRequest{SnapshotID: sn.ID, Secrets: secrets})
	must.NoError(t, err)
	must.NoError(t, c.DeleteSnapshot(ctx, sn.ID, secrets))
	must.NoError(t, c.DeleteVolume(ctx, v.ExternalVolumeID, secrets))
	// A failed call is logged too.
	_, err = c.CreateVolume(ctx, &CreateVolumeRequest{Name: "w", SnapshotID: "99", Capabilities: writer, MountOptions: mo, Secrets: secrets})
	must.Error(t, err)
	must.StrNotContains(t, err.Error(), secret)

	for _, m := range []string{"CreateVolume", "ValidateVolumeCapabilities", "CreateSnapshot", "ListSnapshots", "DeleteSnapshot", "DeleteVolume"} {
		calls := mockCalls(t, p, m)
		must.SliceNotEmpty(t, calls, must.Sprintf("%s reached the plugin", m))
		must.StrContains(t, calls[0], `"secrets":{"secretKey":"`+secret+`"}`, must.Sprintf("%s carried the secrets", m))
	}
	must.StrContains(t, mockCalls(t, p, "CreateVolume")[0], flagSecret)

	out := buf.String()
	for _, m := range []string{"CreateVolume", "ValidateVolumeCapabilities", "CreateSnapshot", "ListSnapshots", "DeleteSnapshot", "DeleteVolume"} {
		must.StrContains(t, out, "/csi.v1.Controller/"+m)
	}
	must.StrContains(t, out, strippedValue)
	must.StrNotContains(t, out, secret)
	must.StrNotContains(t, out, flagSecret)
}

// fakeController answers as told: for the answers and faults the real
// plugins cannot be made to give (a confirmed set that differs from the
// request, a created or listed volume without an ID, required secrets).
type fakeController struct {
	csipb.UnimplementedControllerServer
	secrets  map[string]string // every call must carry these, if set
	create   *csipb.CreateVolumeResponse
	validate *csipb.ValidateVolumeCapabilitiesResponse
	list     *csipb.ListVolumesResponse
}

var _ csipb.ControllerServer = (*fakeController)(nil)

func (f *fakeController) authorize(got map[string]string) error {
	if len(f.secrets) == 0 {
		return nil
	}
	if len(got) == 0 {
		return status.Error(codes.InvalidArgument, "secrets are required")
	}
	for k, v := range f.secrets {
		if got[k] != v {
			return status.Error(codes.Unauthenticated, "authentication failed")
		}
	}
	return nil
}

func (f *fakeController) CreateVolume(_ context.Context, req *csipb.CreateVolumeRequest) (*csipb.CreateVolumeResponse, error) {
	if err := f.authorize(req.GetSecrets()); err != nil {
		return nil, err
	}
	return f.create, nil
}

func (f *fakeController) ValidateVolumeCapabilities(_ context.Context, req *csipb.ValidateVolumeCapabilitiesRequest) (*csipb.ValidateVolumeCapabilitiesResponse, error) {
	if err := f.authorize(req.GetSecrets()); err != nil {
		return nil, err
	}
	return f.validate, nil
}

func (f *fakeController) ListVolumes(context.Context, *csipb.ListVolumesRequest) (*csipb.ListVolumesResponse, error) {
	return f.list, nil
}

func serveController(t *testing.T, srv *fakeController) string {
	return serveFake(t, "controller.sock", func(g *grpc.Server) { csipb.RegisterControllerServer(g, srv) })
}

func TestClient_Controller_Fake(t *testing.T) {
	ctx := context.Background()
	mo := &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"password=hunter2"}}

	t.Run("secrets required", func(t *testing.T) {
		c := dial(t, serveController(t, &fakeController{secrets: map[string]string{"k": "v"},
			create: &csipb.CreateVolumeResponse{Volume: &csipb.Volume{VolumeId: "x"}}}))
		_, err := c.CreateVolume(ctx, &CreateVolumeRequest{Name: "n", Capabilities: writer})
		must.Eq(t, CodeInvalidArgument, CodeOf(err))
		_, err = c.CreateVolume(ctx, &CreateVolumeRequest{Name: "n", Capabilities: writer, Secrets: structs.CSISecrets{"k": "wrong"}})
		must.Eq(t, CodeUnauthenticated, CodeOf(err))
		must.True(t, IsFinal(err))
		must.StrNotContains(t, err.Error(), "wrong")
		v, err := c.CreateVolume(ctx, &CreateVolumeRequest{Name: "n", Capabilities: writer, Secrets: structs.CSISecrets{"k": "v"}})
		must.NoError(t, err)
		must.Eq(t, "x", v.ExternalVolumeID)
	})

	t.Run("volume without an ID", func(t *testing.T) {
		c := dial(t, serveController(t, &fakeController{create: &csipb.CreateVolumeResponse{}}))
		_, err := c.CreateVolume(ctx, &CreateVolumeRequest{Name: "n", Capabilities: writer})
		must.ErrorIs(t, err, ErrInvalidResponse)
		must.True(t, IsFinal(err))
		must.StrHasPrefix(t, `plugin "mock": CreateVolume: `, err.Error())
	})

	cases := []struct {
		name string
		resp *csipb.ValidateVolumeCapabilitiesResponse
		want *ValidateResponse // the answer; nil with an error
		err  string            // the error; "" for none
	}{
		{"confirmed as asked", &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{
			VolumeCapabilities: []*csipb.VolumeCapability{mountCap(snw, "ext4", "password=hunter2")}}}, &ValidateResponse{Confirmed: true}, ""},
		{"confirmed with a message", &csipb.ValidateVolumeCapabilitiesResponse{Message: "fine", Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{
			VolumeCapabilities: []*csipb.VolumeCapability{mountCap(snw, "ext4", "password=hunter2")}}}, &ValidateResponse{Confirmed: true, Message: "fine"}, ""},
		{"not confirmed", &csipb.ValidateVolumeCapabilitiesResponse{Message: "no such thing"}, &ValidateResponse{Message: "no such thing"}, ""},
		{"not confirmed, no message", &csipb.ValidateVolumeCapabilitiesResponse{}, &ValidateResponse{}, ""},
		{"other fs type", &csipb.ValidateVolumeCapabilitiesResponse{Message: "close enough", Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{
			VolumeCapabilities: []*csipb.VolumeCapability{mountCap(snw, "xfs", "password=hunter2")}}}, nil,
			`plugin "mock": ValidateVolumeCapabilities: csi: confirmed capabilities differ from those requested: ` +
				`capability single-node-writer/file-system: fs type "ext4" not confirmed (confirmed: "xfs") (plugin message: close enough)`},
		{"other mount flags", &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{
			VolumeCapabilities: []*csipb.VolumeCapability{mountCap(snw, "ext4")}}}, nil,
			`plugin "mock": ValidateVolumeCapabilities: csi: confirmed capabilities differ from those requested: ` +
				`capability single-node-writer/file-system: mount flags differ`},
		{"block confirmed as mount", &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{
			VolumeCapabilities: []*csipb.VolumeCapability{blockCap(snw)}}}, nil, "attachment mode file-system not confirmed (confirmed: block-device)"},
	}
	for _, tc := range cases {
		t.Run("validate "+tc.name, func(t *testing.T) {
			c := dial(t, serveController(t, &fakeController{validate: tc.resp}))
			r, err := c.ValidateVolumeCapabilities(ctx, &ValidateRequest{ExternalVolumeID: "v", Capabilities: writer, MountOptions: mo})
			must.Eq(t, tc.want, r)
			if tc.err == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, ErrCapabilityMismatch)
			must.True(t, IsFinal(err))
			must.StrContains(t, err.Error(), tc.err)
			must.StrNotContains(t, err.Error(), "hunter2")
		})
	}
}
