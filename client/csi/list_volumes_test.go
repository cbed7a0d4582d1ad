package csi

import (
	"context"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/structs"
)

func TestClient_ListVolumes_MockDriver(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-enable-topology"}})
	c := dial(t, p.Socket)
	ctx := context.Background()
	_, err := c.CreateVolume(ctx, &CreateVolumeRequest{Name: "data", CapacityMin: 1 << 20, Capabilities: writer})
	must.NoError(t, err)

	// The mock starts with volumes 1 to 3, of 100 GiB, published to its
	// own node; its tokens are offsets.
	topo := []*structs.CSITopology{{Segments: map[string]string{"io.kubernetes.storage.mock/node": "some-mock-node"}}}
	mockVolume := func(id, name string, capacity int64) *structs.CSIExternalVolume {
		return &structs.CSIExternalVolume{ExternalID: id, CapacityBytes: capacity, Context: map[string]string{"name": name},
			Topologies: topo, PublishedExternalNodeIDs: []string{csitest.DefaultMockName}}
	}
	first, err := c.ListVolumes(ctx, 3, "")
	must.NoError(t, err)
	must.Eq(t, &ListVolumesResponse{Volumes: []*structs.CSIExternalVolume{
		mockVolume("1", "Mock Volume 1", 100<<30),
		mockVolume("2", "Mock Volume 2", 100<<30),
		mockVolume("3", "Mock Volume 3", 100<<30),
	}, NextToken: "3"}, first)
	last, err := c.ListVolumes(ctx, 3, first.NextToken)
	must.NoError(t, err)
	must.Eq(t, &ListVolumesResponse{Volumes: []*structs.CSIExternalVolume{mockVolume("4", "data", 1<<20)}}, last)

	all, err := c.ListVolumes(ctx, 0, "")
	must.NoError(t, err)
	must.SliceLen(t, 4, all.Volumes, must.Sprint("0 lets the plugin choose: the mock gives all"))
	must.Eq(t, "", all.NextToken)

	_, err = c.ListVolumes(ctx, 1, "not-a-number")
	must.Eq(t, CodeAborted, CodeOf(err), must.Sprint("a stale token: start again"))
	must.False(t, IsFinal(err))

	_, err = c.ListVolumes(ctx, -1, "")
	must.ErrorIs(t, err, ErrInvalidRequest)
	must.StrHasPrefix(t, `plugin "mock": ListVolumes: csi: invalid request: max entries -1 is negative`, err.Error())
}

func TestClient_ListVolumes_Hostpath(t *testing.T) {
	p := csitest.StartHostpath(t)
	c := dial(t, p.Socket)
	ctx := context.Background()

	want := map[string]int64{}
	for i, name := range []string{"a", "b", "c"} {
		v, err := c.CreateVolume(ctx, &CreateVolumeRequest{Name: name, CapacityMin: int64(i+1) << 20, Capabilities: writer})
		must.NoError(t, err)
		want[v.ExternalVolumeID] = v.CapacityBytes
	}

	// One volume a page: every volume once, then no token.
	got := map[string]int64{}
	token, pages := "", 0
	for {
		page, err := c.ListVolumes(ctx, 1, token)
		must.NoError(t, err)
		must.SliceLen(t, 1, page.Volumes)
		v := page.Volumes[0]
		must.SliceEmpty(t, v.PublishedExternalNodeIDs, must.Sprint("published nowhere"))
		got[v.ExternalID] = v.CapacityBytes
		pages++
		if token = page.NextToken; token == "" {
			break
		}
		must.Less(t, 3, pages, must.Sprint("no more pages than volumes"))
	}
	must.Eq(t, 3, pages)
	must.Eq(t, want, got)
}

func TestClient_ListVolumes_VolumeWithoutID(t *testing.T) {
	c := dial(t, serveController(t, &fakeController{list: &csipb.ListVolumesResponse{
		Entries: []*csipb.ListVolumesResponse_Entry{{Volume: &csipb.Volume{VolumeId: "v1"}}, {}},
	}}))
	_, err := c.ListVolumes(context.Background(), 0, "")
	must.ErrorIs(t, err, ErrInvalidResponse)
	must.True(t, IsFinal(err))
	must.StrHasPrefix(t, `plugin "mock": ListVolumes: `, err.Error())
	must.StrContains(t, err.Error(), "entry 2 of 2 was listed without a volume_id")
}
