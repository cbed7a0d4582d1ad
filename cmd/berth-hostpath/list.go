package main

import (
	"context"
	"encoding/base64"
	"errors"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// List tokens name the last ID of the previous page, so a page boundary
// survives creations and deletions: the next page starts at the first ID
// after it. A token is base64url("<kind>:<id>"); the kind keeps a
// snapshot token from being used to list volumes.
const (
	tokenVolumes   = "volumes"
	tokenSnapshots = "snapshots"
)

var errBadToken = errors.New("invalid starting_token")

func encodeToken(kind, lastID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + lastID))
}

// decodeToken returns the last ID a token names; "" for no token.
func decodeToken(kind, token string) (string, error) {
	if token == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", errBadToken
	}
	k, id, ok := strings.Cut(string(raw), ":")
	if !ok || k != kind || id == "" {
		return "", errBadToken
	}
	return id, nil
}

// page picks from sorted ids the ones after the token, at most limit
// (0 = all), and the token for the next page ("" when this is the last).
func page(kind string, ids []string, token string, limit int32) ([]string, string, error) {
	if limit < 0 {
		return nil, "", status.Errorf(codes.InvalidArgument, "max_entries %d is negative", limit)
	}
	after, err := decodeToken(kind, token)
	if err != nil {
		return nil, "", status.Errorf(codes.Aborted, "%v %q: start the listing again without a token", err, token)
	}
	start := 0
	if after != "" {
		start = sort.SearchStrings(ids, after)
		if start < len(ids) && ids[start] == after {
			start++
		}
	}
	ids = ids[start:]
	if limit == 0 || int(limit) >= len(ids) {
		return ids, "", nil
	}
	ids = ids[:limit]
	return ids, encodeToken(kind, ids[len(ids)-1]), nil
}

// ListVolumes pages through volumes in ID order.
func (s *controllerServer) ListVolumes(ctx context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	st := s.store.current()
	ids, next, err := page(tokenVolumes, st.sortedVolumeIDs(), req.GetStartingToken(), req.GetMaxEntries())
	if err != nil {
		return nil, err
	}
	resp := &csi.ListVolumesResponse{NextToken: next}
	for _, id := range ids {
		v := st.Volumes[id]
		e := &csi.ListVolumesResponse_Entry{Volume: s.csiVolume(v)}
		if s.attachEnabled() {
			e.Status = &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: publishedNodes(v)}
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}

// ListSnapshots pages through snapshots in ID order, optionally only the
// one with snapshot_id or those of source_volume_id.
func (s *controllerServer) ListSnapshots(ctx context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	st := s.store.current()
	var ids []string
	for _, id := range st.sortedSnapshotIDs() {
		sn := st.Snapshots[id]
		if (req.GetSnapshotId() == "" || id == req.GetSnapshotId()) &&
			(req.GetSourceVolumeId() == "" || sn.SourceVolumeID == req.GetSourceVolumeId()) {
			ids = append(ids, id)
		}
	}
	ids, next, err := page(tokenSnapshots, ids, req.GetStartingToken(), req.GetMaxEntries())
	if err != nil {
		return nil, err
	}
	resp := &csi.ListSnapshotsResponse{NextToken: next}
	for _, id := range ids {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: csiSnapshot(st.Snapshots[id])})
	}
	return resp, nil
}
