package integration

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client"
	"github.com/berth-csi/berth/client/clienttest"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/structs"
)

func register(t *testing.T, s *servertest.TestServer, vol *structs.CSIVolume) (*structs.CSIVolumeRegisterResponse, error) {
	t.Helper()
	var resp structs.CSIVolumeRegisterResponse
	err := rpc(t, s, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{vol}}, &resp)
	return &resp, err
}

func TestController_Expand_Hostpath(t *testing.T) {
	c := hostpathCluster(t)
	via := c.Followers()[0]
	const mib = int64(1 << 20)
	vol, err := create(t, via, createSpec("data"))
	must.NoError(t, err)
	must.Eq(t, mib, vol.Capacity)

	// Re-register with a larger capacity_min: the controller grows it.
	grow := vol.Copy()
	grow.Secrets = nil
	grow.RequestedCapacityMin = 4 * mib
	_, err = register(t, via, grow)
	must.NoError(t, err)
	must.Eq(t, 4*mib, volume(t, c, "data").Capacity)

	// Re-create with a larger one: the same volume, grown again.
	again := createSpec("data")
	again.RequestedCapacityMin = 8 * mib
	vol, err = create(t, via, again)
	must.NoError(t, err)
	must.Eq(t, 8*mib, vol.Capacity)

	// Shrinking is refused, naming the field, and changes nothing.
	shrink := createSpec("data")
	shrink.ExternalID = vol.ExternalID
	shrink.RequestedCapacityMin = 2 * mib
	_, err = register(t, via, shrink)
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.ErrorContains(t, err, "capacity_min")
	must.ErrorContains(t, err, "cannot shrink")
	must.Eq(t, 8*mib, volume(t, c, "data").Capacity)

	// A re-register that leaves capacity out keeps it.
	same := createSpec("data")
	same.ExternalID = vol.ExternalID
	same.RequestedCapacityMin = 0
	_, err = register(t, via, same)
	must.NoError(t, err)
	got := volume(t, c, "data")
	must.Eq(t, 8*mib, got.Capacity)
	must.Eq(t, 8*mib, got.RequestedCapacityMin)
}

func TestController_Snapshots_Hostpath(t *testing.T) {
	c := hostpathCluster(t)
	via := c.Followers()[1]
	src, err := create(t, via, createSpec("src"))
	must.NoError(t, err)

	snap := func(name string) *structs.CSISnapshot {
		t.Helper()
		var resp structs.CSISnapshotCreateResponse
		must.NoError(t, rpc(t, via, "CSIVolume.CreateSnapshot", &structs.CSISnapshotCreateRequest{VolumeID: "src", Name: name}, &resp))
		must.NotNil(t, resp.Snapshot)
		must.Eq(t, "src", resp.Snapshot.SourceVolumeID)
		must.Eq(t, src.ExternalID, resp.Snapshot.ExternalSourceVolumeID)
		must.Eq(t, "hostpath", resp.Snapshot.PluginID)
		return resp.Snapshot
	}
	first := snap("nightly")
	must.Eq(t, first.ID, snap("nightly").ID, must.Sprint("the name is the idempotency key"))
	second := snap("weekly")
	must.NotEq(t, first.ID, second.ID)

	// One snapshot a page, across every plugin that lists them.
	var ids []string
	token := ""
	for pages := 0; ; pages++ {
		must.Less(t, 5, pages, must.Sprint("pagination does not end"))
		var resp structs.CSISnapshotListResponse
		must.NoError(t, rpc(t, via, "CSIVolume.ListSnapshots", &structs.CSISnapshotListRequest{PerPage: 1, NextToken: token}, &resp))
		must.LessEq(t, 1, len(resp.Snapshots))
		for _, sn := range resp.Snapshots {
			must.Eq(t, "src", sn.SourceVolumeID)
			ids = append(ids, sn.ID)
		}
		if token = resp.NextToken; token == "" {
			break
		}
	}
	must.SliceContainsAll(t, []string{first.ID, second.ID}, ids)

	// Restore and clone: both make new volumes from the source's content.
	restore := createSpec("restored")
	restore.SnapshotID = first.ID
	restored, err := create(t, via, restore)
	must.NoError(t, err)
	must.NotEq(t, src.ExternalID, restored.ExternalID)
	clone := createSpec("cloned")
	clone.CloneID = "src" // berth's ID; the plugin gets its own
	_, err = create(t, via, clone)
	must.NoError(t, err)

	// The provider's view marks what berth does not know.
	var dereg structs.CSIVolumeDeregisterResponse
	must.NoError(t, rpc(t, via, "CSIVolume.Deregister", &structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{"restored"}}, &dereg))
	var ext structs.CSIVolumeExternalListResponse
	must.NoError(t, rpc(t, via, "CSIVolume.ListExternal", &structs.CSIVolumeExternalListRequest{PluginID: "hostpath"}, &ext))
	byExt := map[string]string{}
	for _, ev := range ext.Volumes {
		byExt[ev.ExternalID] = ev.VolumeID
	}
	must.Eq(t, "src", byExt[src.ExternalID])
	must.MapContainsKey(t, byExt, restored.ExternalID)
	must.Eq(t, "", byExt[restored.ExternalID], must.Sprint("a deregistered volume is unknown to berth"))

	var del structs.CSISnapshotDeleteResponse
	must.NoError(t, rpc(t, via, "CSIVolume.DeleteSnapshot", &structs.CSISnapshotDeleteRequest{PluginID: "hostpath", SnapshotID: first.ID}, &del))
	// CSI's delete of a missing snapshot succeeds; berth asks first, and
	// says it is not there instead of "deleted".
	err = rpc(t, via, "CSIVolume.DeleteSnapshot", &structs.CSISnapshotDeleteRequest{PluginID: "hostpath", SnapshotID: first.ID}, &del)
	must.ErrorIs(t, err, structs.ErrNotFound)
	must.ErrorContains(t, err, fmt.Sprintf("snapshot %q not found at plugin \"hostpath\"", first.ID))
	var list structs.CSISnapshotListResponse
	must.NoError(t, rpc(t, via, "CSIVolume.ListSnapshots", &structs.CSISnapshotListRequest{PluginID: "hostpath"}, &list))
	must.SliceLen(t, 1, list.Snapshots)
	must.Eq(t, second.ID, list.Snapshots[0].ID)

	// Bad input names what is wrong.
	var resp structs.CSISnapshotCreateResponse
	err = rpc(t, via, "CSIVolume.CreateSnapshot", &structs.CSISnapshotCreateRequest{VolumeID: "nope"}, &resp)
	must.ErrorIs(t, err, structs.ErrNotFound)
	must.ErrorContains(t, err, `volume "nope"`)
	err = rpc(t, via, "CSIVolume.ListSnapshots", &structs.CSISnapshotListRequest{NextToken: "garbage"}, &list)
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.ErrorContains(t, err, "next_token")
}

func TestController_Validate_Hostpath(t *testing.T) {
	c := hostpathCluster(t)
	vol, err := create(t, c.Leader(), createSpec("made"))
	must.NoError(t, err)
	// A provider volume is one berth volume at most: each registration
	// below takes it after the one before lets it go.
	deregister := func(id string) {
		var resp structs.CSIVolumeDeregisterResponse
		must.NoError(t, rpc(t, c.Leader(), "CSIVolume.Deregister", &structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{id}}, &resp))
	}
	deregister("made")

	// Confirmed: a hand registration of the same provider volume.
	byHand := createSpec("byhand")
	byHand.ExternalID = vol.ExternalID
	_, err = register(t, c.Leader(), byHand)
	must.NoError(t, err)
	deregister("byhand")

	// Not confirmed (hostpath cannot serve block devices): registered,
	// with the plugin's reason as a warning.
	block := createSpec("block")
	block.ExternalID = vol.ExternalID
	block.RequestedCapabilities[0].AttachmentMode = structs.CSIVolumeAttachmentModeBlockDevice
	resp, err := register(t, c.Leader(), block)
	must.NoError(t, err)
	must.SliceLen(t, 1, resp.Warnings)
	must.StrContains(t, resp.Warnings[0], "block")
	must.StrContains(t, resp.Warnings[0], `"block"`)

	// A volume the provider does not have is refused and not registered.
	missing := createSpec("missing")
	missing.ExternalID = "vol-does-not-exist"
	_, err = register(t, c.Leader(), missing)
	must.ErrorIs(t, err, structs.ErrNotFound)
	must.ErrorContains(t, err, `"missing"`)
	var get structs.CSIVolumeGetResponse
	must.NoError(t, rpc(t, c.Leader(), "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: "missing"}, &get))
	must.Nil(t, get.Volume)
}

// The mock driver logs every request it receives, secrets included, at
// -v=3: that is how this test sees the secrets reach the plugin. Every
// server and client logs at trace into rec, which must never hold one.
func TestController_Mock_SecretsAndTopology(t *testing.T) {
	var rec testlog.Recorder
	c := servertest.Cluster(t, 3, func(cfg *server.Config) { cfg.Logger = rec.Logger(cfg.NodeName) })
	mock := csitest.StartMockDriver(t, csitest.MockOptions{
		ExtraArgs: []string{"-v=5", "-enable-topology"},
		Env:       []string{"CSI_ENABLE_CREDS=true"},
	})
	clienttest.New(t, "client-1", rpcAddrs(c), clienttest.WithPlugin("mock", "monolith", mock.Socket),
		func(cfg *client.Config) { cfg.Logger = rec.Logger("client-1") })
	eventually(t, 20*time.Second, "mock healthy", func() bool { return healthy(plugin(t, c, "mock"), 1, 1) })

	const (
		volSecret    = "vol-secret-4f9a"
		snapSecret   = "snap-secret-77c1"
		deleteSecret = "delete-secret-0b3e"
	)
	var replies []any
	via := c.Followers()[0]
	mockTopo := &structs.CSITopology{Segments: map[string]string{"io.kubernetes.storage.mock/node": "some-mock-node"}}

	spec := createSpec("data")
	spec.PluginID = "mock"
	spec.Secrets = structs.CSISecrets{"secretKey": volSecret}
	spec.Topologies = []*structs.CSITopology{mockTopo}
	vol, err := create(t, via, spec)
	must.NoError(t, err)
	replies = append(replies, vol)
	must.SliceLen(t, 1, vol.Topologies)
	must.True(t, vol.Topologies[0].Equal(mockTopo), must.Sprint("the topology the plugin returned is stored"))
	must.True(t, volume(t, c, "data").Topologies[0].Equal(mockTopo))

	// A topology no node of the plugin is in is refused before the plugin
	// is asked, and nothing is registered.
	elsewhere := createSpec("elsewhere")
	elsewhere.PluginID = "mock"
	elsewhere.Topologies = []*structs.CSITopology{{Segments: map[string]string{"zone": "b"}}}
	_, err = create(t, via, elsewhere)
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.ErrorContains(t, err, "{zone=b}")
	must.ErrorContains(t, err, `"elsewhere"`)

	// Register a provider volume by hand: validated, confirmed. It is made
	// through berth first, then deregistered: a provider volume is one
	// berth volume at most, and "data" is needed below.
	other := createSpec("other")
	other.PluginID, other.Topologies, other.Secrets = "mock", []*structs.CSITopology{mockTopo}, spec.Secrets
	made, err := create(t, via, other)
	must.NoError(t, err)
	var dereg structs.CSIVolumeDeregisterResponse
	must.NoError(t, rpc(t, via, "CSIVolume.Deregister", &structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{"other"}}, &dereg))
	byHand := createSpec("byhand")
	byHand.PluginID = "mock"
	byHand.ExternalID = made.ExternalID
	byHand.Secrets = structs.CSISecrets{"secretKey": volSecret}
	rresp, err := register(t, via, byHand)
	must.NoError(t, err)
	must.SliceEmpty(t, rresp.Warnings)

	var sresp structs.CSISnapshotCreateResponse
	must.NoError(t, rpc(t, via, "CSIVolume.CreateSnapshot", &structs.CSISnapshotCreateRequest{
		VolumeID: "data", Name: "snap-1", Secrets: structs.CSISecrets{"secretKey": snapSecret}}, &sresp))
	replies = append(replies, &sresp)

	// A restore with no capacity_min asks for the snapshot's size, here
	// (the mock says none) its source volume's (drivers such as the
	// kubernetes-csi hostpath driver refuse a restore with no capacity
	// range).
	must.EqOp(t, 0, sresp.Snapshot.SizeBytes)
	restore := createSpec("restored")
	restore.PluginID, restore.Topologies, restore.Secrets = "mock", []*structs.CSITopology{mockTopo}, spec.Secrets
	restore.RequestedCapacityMin, restore.SnapshotID = 0, sresp.Snapshot.ID
	_, err = create(t, via, restore)
	must.NoError(t, err)
	must.True(t, mock.Received("CreateVolume", fmt.Sprintf(`"name":"restored","capacity_range":{"required_bytes":%d}`, vol.Capacity)),
		must.Sprint("the restore asked for the source volume's size"))

	var get structs.CSIVolumeGetResponse
	must.NoError(t, rpc(t, via, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: "data"}, &get))
	replies = append(replies, &get)
	must.Nil(t, get.Volume.Secrets)

	must.NoError(t, rpc(t, via, "CSIVolume.Deregister", &structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{"byhand"}}, &dereg))
	var del structs.CSIVolumeDeleteResponse
	must.NoError(t, rpc(t, via, "CSIVolume.Delete", &structs.CSIVolumeDeleteRequest{
		VolumeIDs: []string{"data"}, Secrets: structs.CSISecrets{"secretKey": deleteSecret}}, &del))

	for _, call := range []struct{ method, secret string }{
		{"CreateVolume", volSecret},
		{"ValidateVolumeCapabilities", volSecret},
		{"CreateSnapshot", snapSecret},
		{"DeleteVolume", deleteSecret},
	} {
		must.True(t, mock.Received(call.method, call.secret),
			must.Sprintf("the plugin received %s with its secret", call.method))
	}
	must.True(t, mock.Received("CreateVolume", "some-mock-node"),
		must.Sprint("the required topology reached the plugin"))

	logs := rec.String()
	must.StrContains(t, logs, "CreateVolume", must.Sprint("the trace logs record the calls"))
	for _, secret := range []string{volSecret, snapSecret, deleteSecret} {
		must.StrNotContains(t, logs, secret)
		for _, r := range replies {
			b, err := json.Marshal(r)
			must.NoError(t, err)
			must.StrNotContains(t, string(b), secret)
		}
	}
}
