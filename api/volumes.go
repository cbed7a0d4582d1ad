package api

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/berth-csi/berth/structs"
)

// VolumeSpec is a volume as a user describes it to register or create it.
// Its JSON field names are structs.CSIVolume's; unlike structs.CSIVolume it
// marshals Secrets and MountOptions.MountFlags as they are, because the
// server needs the real values. Never log or print one.
type VolumeSpec struct {
	ID                    string                         `json:",omitempty"`
	Name                  string                         `json:",omitempty"`
	Namespace             string                         `json:",omitempty"`
	ExternalID            string                         `json:",omitempty"`
	PluginID              string                         `json:",omitempty"`
	RequestedCapabilities []*structs.CSIVolumeCapability `json:",omitempty"`
	MountOptions          *MountOptions                  `json:",omitempty"`
	Secrets               map[string]string              `json:",omitempty"`
	Parameters            map[string]string              `json:",omitempty"`
	Context               map[string]string              `json:",omitempty"`
	Topologies            []*structs.CSITopology         `json:",omitempty"`
	RequestedCapacityMin  int64                          `json:",omitempty"`
	RequestedCapacityMax  int64                          `json:",omitempty"`
	SnapshotID            string                         `json:",omitempty"`
	CloneID               string                         `json:",omitempty"`
}

// MountOptions are the fs type and mount flags a volume is mounted with.
// Unlike structs.CSIMountOptions it marshals the flags unredacted.
type MountOptions struct {
	FSType     string   `json:",omitempty"`
	MountFlags []string `json:",omitempty"`
}

// String never shows secrets or mount flags, so a VolumeSpec printed by
// mistake leaks nothing. Value receivers cover both VolumeSpec and
// *VolumeSpec (fmt prints a nil pointer as <nil>).
func (v VolumeSpec) String() string {
	return fmt.Sprintf("volume %q (plugin %q, %d secrets)", v.ID, v.PluginID, len(v.Secrets))
}

// GoString is used by %#v; like String it hides secrets and mount flags.
func (v VolumeSpec) GoString() string { return "api.VolumeSpec{" + v.String() + "}" }

// String shows the fs type and how many mount flags, never the flags.
func (o MountOptions) String() string {
	return fmt.Sprintf("fs_type=%s mount_flags=%d redacted", o.FSType, len(o.MountFlags))
}

// GoString is used by %#v; like String it hides the mount flags.
func (o MountOptions) GoString() string { return "api.MountOptions{" + o.String() + "}" }

// CSIVolumes reads and changes CSI volumes.
type CSIVolumes struct{ c *Client }

// CSIVolumes returns the CSI volume endpoints.
func (c *Client) CSIVolumes() *CSIVolumes { return &CSIVolumes{c} }

// Register registers a volume that exists outside berth, or updates the
// mutable fields of one already registered.
func (v *CSIVolumes) Register(vol *VolumeSpec) (*WriteMeta, error) {
	if vol == nil || vol.ID == "" {
		return nil, fmt.Errorf("api: register volume: the volume spec has no ID")
	}
	body := struct{ Volumes []*VolumeSpec }{Volumes: []*VolumeSpec{vol}}
	return v.c.write(http.MethodPut, "/v1/volume/csi/"+escape(vol.ID), nil, body, nil)
}

// Deregister forgets a volume. force allows it while claims remain, but
// the server still refuses unless every claiming allocation has stopped.
func (v *CSIVolumes) Deregister(id string, force bool) (*WriteMeta, error) {
	var params url.Values
	if force {
		params = url.Values{"force": []string{"true"}}
	}
	return v.c.write(http.MethodDelete, "/v1/volume/csi/"+escape(id), params, nil, nil)
}

// List returns the volumes, filtered by q's Prefix, PluginID and NodeID.
func (v *CSIVolumes) List(q *QueryOptions) ([]*structs.CSIVolumeListStub, *QueryMeta, error) {
	var out []*structs.CSIVolumeListStub
	qm, err := v.c.query("/v1/volumes", typeCSI(), &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// Info returns one volume by its full ID, with its claims; a missing volume
// is an error that matches structs.ErrNotFound.
func (v *CSIVolumes) Info(id string, q *QueryOptions) (*structs.CSIVolume, *QueryMeta, error) {
	var out structs.CSIVolume
	qm, err := v.c.query("/v1/volume/csi/"+escape(id), nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Claim takes a claim on req.VolumeID or moves one along its release. It is
// for tools and tests; allocations claim through the scheduler.
func (v *CSIVolumes) Claim(req *structs.CSIVolumeClaimRequest) (*structs.CSIVolume, *WriteMeta, error) {
	if req == nil || req.VolumeID == "" {
		return nil, nil, fmt.Errorf("api: claim: the request names no volume")
	}
	var out structs.CSIVolumeClaimResponse
	wm, err := v.c.write(http.MethodPut, "/v1/volume/csi/"+escape(req.VolumeID)+"/claim", nil, req, &out)
	if err != nil {
		return nil, nil, err
	}
	return out.Volume, wm, nil
}
