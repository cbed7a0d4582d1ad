package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/shoenig/test/must"
	"google.golang.org/grpc/codes"
)

func TestPage(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	cases := []struct {
		name     string
		token    string
		limit    int32
		want     []string
		wantNext string
	}{
		{"all", "", 0, ids, ""},
		{"first page", "", 2, []string{"a", "b"}, encodeToken(tokenVolumes, "b")},
		{"middle page", encodeToken(tokenVolumes, "b"), 2, []string{"c", "d"}, encodeToken(tokenVolumes, "d")},
		{"last page exactly", encodeToken(tokenVolumes, "c"), 2, []string{"d", "e"}, ""},
		{"rest without a limit", encodeToken(tokenVolumes, "a"), 0, []string{"b", "c", "d", "e"}, ""},
		{"limit above the count", "", 10, ids, ""},
		{"after a deleted id", encodeToken(tokenVolumes, "bb"), 1, []string{"c"}, encodeToken(tokenVolumes, "c")},
		{"after the last id", encodeToken(tokenVolumes, "e"), 0, []string{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, next, err := page(tokenVolumes, ids, tc.token, tc.limit)
			must.NoError(t, err)
			must.SliceContainsAll(t, tc.want, got)
			must.Len(t, len(tc.want), got)
			must.Eq(t, tc.wantNext, next)
		})
	}
}

func TestPage_BadTokenIsAborted(t *testing.T) {
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for name, token := range map[string]string{
		"csi-sanity's":       "invalid-token",
		"not base64":         "!!!",
		"no kind":            b64("vol-1"),
		"empty id":           b64(tokenVolumes + ":"),
		"a snapshots token":  encodeToken(tokenSnapshots, "snap-1"),
		"padded base64 text": base64.URLEncoding.EncodeToString([]byte("volumes:ab")),
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := page(tokenVolumes, []string{"a"}, token, 0)
			mustCode(t, err, codes.Aborted, "invalid starting_token", "without a token")
		})
	}
}

func TestPage_NegativeLimit(t *testing.T) {
	_, _, err := page(tokenVolumes, nil, "", -1)
	mustCode(t, err, codes.InvalidArgument, "max_entries -1")
}

// TestListVolumes_PagesCoverEverythingOnce walks pages of every size and
// checks each volume comes exactly once, with its published nodes.
func TestListVolumes_PagesCoverEverythingOnce(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	_, cs, _ := services(newTestDriver(t, cfg))
	want := map[string]bool{}
	for i := range 7 {
		want[createVolume(t, cs, fmt.Sprintf("vol-%d", i), 1<<20).VolumeId] = true
	}
	var published string
	for id := range want {
		published = id
		break
	}
	_, err := cs.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: published, NodeId: cfg.NodeID, VolumeCapability: mountCap(singleWriter)})
	must.NoError(t, err)

	for limit := int32(1); limit <= 8; limit++ {
		seen := map[string]bool{}
		token, pages := "", 0
		for {
			resp, err := cs.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: limit, StartingToken: token})
			must.NoError(t, err)
			must.LessEq(t, int(limit), len(resp.Entries))
			for _, e := range resp.Entries {
				id := e.Volume.VolumeId
				must.False(t, seen[id], must.Sprintf("volume %s listed twice with max_entries %d", id, limit))
				seen[id] = true
				if id == published {
					must.Eq(t, []string{cfg.NodeID}, e.Status.PublishedNodeIds)
				} else {
					must.SliceEmpty(t, e.Status.PublishedNodeIds)
				}
			}
			pages++
			if token = resp.NextToken; token == "" {
				break
			}
		}
		must.Eq(t, want, seen)
		must.Eq(t, (7+int(limit)-1)/int(limit), pages)
	}
}

func TestListVolumes_DeletingTheLastOfAPageKeepsTheToken(t *testing.T) {
	ctx := context.Background()
	_, cs, _ := services(newTestDriver(t, testConfig(t)))
	for i := range 4 {
		createVolume(t, cs, fmt.Sprintf("vol-%d", i), 0)
	}
	first, err := cs.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 2})
	must.NoError(t, err)
	for _, e := range first.Entries {
		_, err := cs.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: e.Volume.VolumeId})
		must.NoError(t, err)
	}
	rest, err := cs.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: first.NextToken})
	must.NoError(t, err)
	must.Len(t, 2, rest.Entries)
	must.Eq(t, "", rest.NextToken)
}

func TestListVolumes_WithoutAttachNoStatus(t *testing.T) {
	cfg := testConfig(t)
	cfg.DisableAttach = true
	_, cs, _ := services(newTestDriver(t, cfg))
	createVolume(t, cs, "v", 0)
	resp, err := cs.ListVolumes(context.Background(), &csi.ListVolumesRequest{})
	must.NoError(t, err)
	must.Len(t, 1, resp.Entries)
	must.Nil(t, resp.Entries[0].Status)
}

func TestListSnapshots_FiltersAndPages(t *testing.T) {
	ctx := context.Background()
	_, cs, _ := services(newTestDriver(t, testConfig(t)))
	a := createVolume(t, cs, "a", 1<<20)
	b := createVolume(t, cs, "b", 1<<20)
	snapsOf := map[string][]string{}
	for i, v := range []*csi.Volume{a, a, a, b} {
		resp, err := cs.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: fmt.Sprintf("s%d", i), SourceVolumeId: v.VolumeId})
		must.NoError(t, err)
		snapsOf[v.VolumeId] = append(snapsOf[v.VolumeId], resp.Snapshot.SnapshotId)
	}
	ids := func(r *csi.ListSnapshotsResponse) []string {
		var out []string
		for _, e := range r.Entries {
			out = append(out, e.Snapshot.SnapshotId)
		}
		return out
	}

	t.Run("by source volume", func(t *testing.T) {
		resp, err := cs.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SourceVolumeId: a.VolumeId})
		must.NoError(t, err)
		must.SliceContainsAll(t, snapsOf[a.VolumeId], ids(resp))
	})
	t.Run("by id", func(t *testing.T) {
		resp, err := cs.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: snapsOf[b.VolumeId][0]})
		must.NoError(t, err)
		must.Eq(t, snapsOf[b.VolumeId], ids(resp))
	})
	t.Run("by id and another source", func(t *testing.T) {
		resp, err := cs.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: snapsOf[b.VolumeId][0], SourceVolumeId: a.VolumeId})
		must.NoError(t, err)
		must.SliceEmpty(t, resp.Entries)
	})
	t.Run("unknown id", func(t *testing.T) {
		resp, err := cs.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: "snap-none"})
		must.NoError(t, err)
		must.SliceEmpty(t, resp.Entries)
	})
	t.Run("pages of a filter", func(t *testing.T) {
		first, err := cs.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SourceVolumeId: a.VolumeId, MaxEntries: 2})
		must.NoError(t, err)
		must.Len(t, 2, first.Entries)
		rest, err := cs.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SourceVolumeId: a.VolumeId, StartingToken: first.NextToken})
		must.NoError(t, err)
		must.Len(t, 1, rest.Entries)
		must.SliceContainsAll(t, snapsOf[a.VolumeId], append(ids(first), ids(rest)...))
	})
	t.Run("a volumes token", func(t *testing.T) {
		_, err := cs.ListSnapshots(ctx, &csi.ListSnapshotsRequest{StartingToken: encodeToken(tokenVolumes, "vol-1")})
		mustCode(t, err, codes.Aborted)
	})
}
