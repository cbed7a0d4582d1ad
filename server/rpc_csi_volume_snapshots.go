package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// Snapshots and the provider's volume list live at the provider only:
// these endpoints relay to a healthy controller instance and store
// nothing. Replies carry berth's IDs for the volumes berth knows.

// CreateSnapshot snapshots a registered volume. The name is the plugin's
// idempotency key: creating again with the same name returns the same
// snapshot.
func (v *CSIVolume) CreateSnapshot(ctx context.Context, args *structs.CSISnapshotCreateRequest, reply *structs.CSISnapshotCreateResponse) error {
	if args.VolumeID == "" {
		return structs.NewError(structs.CodeBadRequest, "snapshot create: missing the volume to snapshot")
	}
	vol, err := v.srv.State().CSIVolumeByID(nil, args.RequestNamespace(), args.VolumeID)
	if err != nil {
		return err
	}
	if vol == nil {
		return structs.NewError(structs.CodeNotFound,
			"snapshot create: volume %q not found; run `berth volume status` to list volumes", args.VolumeID)
	}
	name := args.Name
	if name == "" {
		name = vol.ID + "-" + time.Now().UTC().Format("20060102T150405Z")
	}
	secrets := args.Secrets
	if len(secrets) == 0 {
		if secrets, err = v.srv.volumeSecrets(vol); err != nil {
			return err
		}
	}
	req := &structs.ClientCSIControllerCreateSnapshotRequest{PluginID: vol.PluginID, ExternalSourceVolumeID: vol.ExternalID,
		Name: name, Secrets: secrets, Parameters: args.Parameters}
	var resp structs.ClientCSIControllerCreateSnapshotResponse
	err = v.srv.callController(ctx, controllerCall{plugin: vol.PluginID, need: capSnapshot,
		method: "ClientCSI.ControllerCreateSnapshot", node: &req.NodeID, opts: &req.QueryOptions, args: req, reply: &resp, volume: vol})
	if err != nil {
		return fmt.Errorf("volume %q: snapshot %q with plugin %q: %w", vol.ID, name, vol.PluginID, err)
	}
	if resp.Snapshot == nil {
		return structs.NewError(structs.CodeInternal, "volume %q: plugin %q answered snapshot %q with no snapshot", vol.ID, vol.PluginID, name)
	}
	snap := resp.Snapshot
	snap.PluginID, snap.Name, snap.SourceVolumeID = vol.PluginID, name, vol.ID
	reply.Snapshot = snap
	reply.Index, err = v.srv.State().LatestIndex()
	return err
}

// DeleteSnapshot deletes a snapshot at the provider. CSI's delete of a
// snapshot that does not exist succeeds, so where the plugin can list
// snapshots, one it does not list is NotFound instead of "deleted".
func (v *CSIVolume) DeleteSnapshot(ctx context.Context, args *structs.CSISnapshotDeleteRequest, reply *structs.CSISnapshotDeleteResponse) error {
	if args.PluginID == "" || args.SnapshotID == "" {
		return structs.NewError(structs.CodeBadRequest, "snapshot delete: give the plugin ID and the snapshot ID (got plugin %q, snapshot %q)",
			args.PluginID, args.SnapshotID)
	}
	switch _, err := v.srv.findSnapshot(ctx, args.PluginID, args.SnapshotID, args.Secrets); {
	case errors.Is(err, structs.ErrNotFound):
		return err
	case err != nil: // the lookup is a courtesy; the delete goes on
		v.srv.logger.Warn("cannot look the snapshot up before deleting it", "snapshot_id", args.SnapshotID, "plugin_id", args.PluginID, "error", err)
	}
	req := &structs.ClientCSIControllerDeleteSnapshotRequest{PluginID: args.PluginID, SnapshotID: args.SnapshotID, Secrets: args.Secrets}
	err := v.srv.callController(ctx, controllerCall{plugin: args.PluginID, need: capSnapshot,
		method: "ClientCSI.ControllerDeleteSnapshot", node: &req.NodeID, opts: &req.QueryOptions,
		args: req, reply: &structs.ClientCSIControllerDeleteSnapshotResponse{}})
	if err != nil {
		return fmt.Errorf("snapshot %q: delete with plugin %q: %w", args.SnapshotID, args.PluginID, err)
	}
	var ierr error
	reply.Index, ierr = v.srv.State().LatestIndex()
	return ierr
}

// findSnapshot asks the plugin's controller for one snapshot. It returns
// nil, and no error, when the plugin cannot list snapshots (nothing can be
// known); a snapshot it does not list is NotFound.
func (s *Server) findSnapshot(ctx context.Context, pluginID, snapshotID string, secrets structs.CSISecrets) (*structs.CSISnapshot, error) {
	plug, err := s.State().CSIPluginWithInstances(nil, pluginID)
	if err != nil || plug == nil || !controllersHave(plug, capListSnapshots) {
		return nil, err
	}
	req := &structs.ClientCSIControllerListSnapshotsRequest{PluginID: pluginID, SnapshotID: snapshotID, Secrets: secrets}
	var resp structs.ClientCSIControllerListSnapshotsResponse
	err = s.callController(ctx, controllerCall{plugin: pluginID, need: capListSnapshots,
		method: "ClientCSI.ControllerListSnapshots", node: &req.NodeID, opts: &req.QueryOptions, args: req, reply: &resp})
	if err != nil {
		return nil, fmt.Errorf("snapshot %q: look it up with plugin %q: %w", snapshotID, pluginID, err)
	}
	for _, sn := range resp.Snapshots {
		if sn != nil && sn.ID == snapshotID {
			return sn, nil
		}
	}
	return nil, structs.NewError(structs.CodeNotFound,
		"snapshot %q not found at plugin %q; `berth volume snapshot list -plugin %s` lists its snapshots", snapshotID, pluginID, pluginID)
}

// ListSnapshots reads one page of snapshots, of one plugin or of every
// plugin that can list them, in plugin ID order.
func (v *CSIVolume) ListSnapshots(ctx context.Context, args *structs.CSISnapshotListRequest, reply *structs.CSISnapshotListResponse) error {
	if args.PerPage < 0 {
		return structs.NewError(structs.CodeBadRequest, "snapshot list: per_page must not be negative (got %d)", args.PerPage)
	}
	plugins := []string{args.PluginID}
	pos := pageToken{Plugin: args.PluginID, Token: args.NextToken}
	if args.PluginID == "" {
		var err error
		if plugins, err = v.srv.pluginsWith(capListSnapshots); err != nil {
			return err
		}
		if pos, err = decodePageToken(args.NextToken, plugins); err != nil {
			return err
		}
	}
	i := slices.Index(plugins, pos.Plugin)
	switch {
	case len(plugins) == 0:
		// no plugin can list snapshots: an empty page
	case i < 0:
		return structs.NewError(structs.CodeBadRequest,
			"snapshot list: next_token names plugin %q, which no longer lists snapshots; start again without it", pos.Plugin)
	default:
		id := plugins[i]
		req := &structs.ClientCSIControllerListSnapshotsRequest{PluginID: id, MaxEntries: args.PerPage,
			StartingToken: pos.Token, Secrets: args.Secrets}
		var resp structs.ClientCSIControllerListSnapshotsResponse
		err := v.srv.callController(ctx, controllerCall{plugin: id, need: capListSnapshots,
			method: "ClientCSI.ControllerListSnapshots", node: &req.NodeID, opts: &req.QueryOptions, args: req, reply: &resp})
		if err != nil {
			return fmt.Errorf("snapshot list of plugin %q: %w", id, err)
		}
		known, err := knownVolumes(v.srv.State(), args.RequestNamespace(), id)
		if err != nil {
			return err
		}
		for _, sn := range resp.Snapshots {
			sn.PluginID = id
			sn.SourceVolumeID = known[sn.ExternalSourceVolumeID]
		}
		reply.Snapshots = resp.Snapshots
		switch {
		case args.PluginID != "":
			reply.NextToken = resp.NextToken
		case resp.NextToken != "":
			reply.NextToken = encodePageToken(pageToken{Plugin: id, Token: resp.NextToken})
		case i+1 < len(plugins):
			reply.NextToken = encodePageToken(pageToken{Plugin: plugins[i+1]})
		}
	}
	var err error
	reply.Index, err = v.srv.State().LatestIndex()
	return err
}

// ListExternal reads one page of the volumes a plugin's controller lists,
// with berth's ID for each volume berth knows.
func (v *CSIVolume) ListExternal(ctx context.Context, args *structs.CSIVolumeExternalListRequest, reply *structs.CSIVolumeExternalListResponse) error {
	if args.PluginID == "" {
		return structs.NewError(structs.CodeBadRequest, "volume list at the provider: missing plugin_id")
	}
	if args.PerPage < 0 {
		return structs.NewError(structs.CodeBadRequest, "volume list at the provider: per_page must not be negative (got %d)", args.PerPage)
	}
	req := &structs.ClientCSIControllerListVolumesRequest{PluginID: args.PluginID, MaxEntries: args.PerPage, StartingToken: args.NextToken}
	var resp structs.ClientCSIControllerListVolumesResponse
	err := v.srv.callController(ctx, controllerCall{plugin: args.PluginID, need: capListVolumes,
		method: "ClientCSI.ControllerListVolumes", node: &req.NodeID, opts: &req.QueryOptions, args: req, reply: &resp})
	if err != nil {
		return fmt.Errorf("volume list of plugin %q: %w", args.PluginID, err)
	}
	known, err := knownVolumes(v.srv.State(), args.RequestNamespace(), args.PluginID)
	if err != nil {
		return err
	}
	for _, ev := range resp.Volumes {
		ev.VolumeID = known[ev.ExternalID]
	}
	reply.Volumes, reply.NextToken = resp.Volumes, resp.NextToken
	reply.Index, err = v.srv.State().LatestIndex()
	return err
}

// knownVolumes maps the external IDs of a plugin's registered volumes to
// berth's IDs.
func knownVolumes(st *state.StateStore, namespace, pluginID string) (map[string]string, error) {
	iter, err := st.CSIVolumesByPluginID(nil, namespace, pluginID)
	if err != nil {
		return nil, err
	}
	known := map[string]string{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		vol := raw.(*structs.CSIVolume)
		known[vol.ExternalID] = vol.ID
	}
	return known, nil
}

// pluginsWith lists, in ID order, the plugins with a controller instance
// that has the capability, healthy or not.
func (s *Server) pluginsWith(need controllerCap) ([]string, error) {
	iter, err := s.State().CSIPlugins(nil)
	if err != nil {
		return nil, err
	}
	var ids []string
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if raw.(*structs.CSIPlugin).ControllersExpected == 0 {
			continue
		}
		plug, err := s.State().CSIPluginWithInstances(nil, raw.(*structs.CSIPlugin).ID)
		if err != nil {
			return nil, err
		}
		if plug != nil && controllersHave(plug, need) {
			ids = append(ids, plug.ID)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// controllersHave reports whether a controller instance of the plugin has
// the capability, healthy or not.
func controllersHave(plug *structs.CSIPlugin, need controllerCap) bool {
	for _, info := range plug.Controllers {
		if info.ControllerInfo != nil && need.has(info.ControllerInfo) {
			return true
		}
	}
	return false
}

// pageToken is where a listing across plugins stands: the plugin to ask
// next and that plugin's own token.
type pageToken struct {
	Plugin string `json:"p"`
	Token  string `json:"t,omitempty"`
}

func encodePageToken(p pageToken) string {
	b, _ := json.Marshal(p) // two strings always marshal
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodePageToken reads a token encodePageToken made; empty is the first
// plugin's first page.
func decodePageToken(tok string, plugins []string) (pageToken, error) {
	if tok == "" {
		if len(plugins) == 0 {
			return pageToken{}, nil
		}
		return pageToken{Plugin: plugins[0]}, nil
	}
	var p pageToken
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if err != nil || p.Plugin == "" {
		return pageToken{}, structs.NewError(structs.CodeBadRequest,
			"snapshot list: next_token %q is not one this list returned; start again without it", tok)
	}
	return p, nil
}
