package api

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

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
	PreferredTopologies   []*structs.CSITopology         `json:",omitempty"`
	RequestedCapacityMin  int64                          `json:",omitempty"`
	RequestedCapacityMax  int64                          `json:",omitempty"`
	SnapshotID            string                         `json:",omitempty"`
	CloneID               string                         `json:",omitempty"`
}

// MountOptions are the fs type and mount flags a volume is mounted with.
// Unlike structs.CSIMountOptions it marshals the flags unredacted.
type MountOptions struct {
	FSType      string                 `json:",omitempty"`
	MountFlags  []string               `json:",omitempty"`
	GroupPolicy structs.CSIGroupPolicy `json:",omitempty"`
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
// mutable fields of one already registered. warnings are what the plugin
// said of a volume it did not refuse (why it did not confirm its
// capabilities).
func (v *CSIVolumes) Register(vol *VolumeSpec) (warnings []string, wm *WriteMeta, err error) {
	if vol == nil || vol.ID == "" {
		return nil, nil, fmt.Errorf("api: register volume: the volume spec has no ID")
	}
	body := struct{ Volumes []*VolumeSpec }{Volumes: []*VolumeSpec{vol}}
	var out structs.CSIVolumeRegisterResponse
	wm, err = v.c.write(http.MethodPut, "/v1/volume/csi/"+escape(vol.ID), nil, body, &out)
	if err != nil {
		return nil, nil, err
	}
	return out.Warnings, wm, nil
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

// Create has a controller of vol's plugin make a new volume, then
// registers it. vol must not name an ExternalID (the plugin makes one);
// its capacity range, snapshot or clone source, topology request and
// secrets go to the plugin. The call lasts as long as the plugin takes.
// It returns the volumes as registered (without secrets), with the
// external ID and capacity the plugin reported.
func (v *CSIVolumes) Create(vol *VolumeSpec) ([]*structs.CSIVolume, *WriteMeta, error) {
	if vol == nil || vol.ID == "" {
		return nil, nil, fmt.Errorf("api: create volume: the volume spec has no ID")
	}
	body := struct{ Volumes []*VolumeSpec }{Volumes: []*VolumeSpec{vol}}
	var out []*structs.CSIVolume
	wm, err := v.c.write(http.MethodPut, "/v1/volume/csi/"+escape(vol.ID)+"/create", nil, body, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, wm, nil
}

// HeaderCSISecrets carries secrets on requests without a body, as
// "key=value,key2=value2".
const HeaderCSISecrets = "X-Berth-CSI-Secrets"

// Delete has a controller of the volume's plugin delete it in the storage
// provider, then deregisters it. secrets, if any, replace the volume's own
// for the delete call; they travel in the X-Berth-CSI-Secrets header, so a
// key may not be empty or hold '=' or ',', and a value may not hold ',',
// end in a space or hold a control character.
// id is the full volume ID.
func (v *CSIVolumes) Delete(id string, secrets map[string]string) (*WriteMeta, error) {
	if id == "" {
		return nil, fmt.Errorf("api: delete volume: no volume ID given")
	}
	header, err := secretsHeader(secrets)
	if err != nil {
		return nil, fmt.Errorf("api: delete volume %q: %w", id, err)
	}
	return v.c.writeWithHeader(http.MethodDelete, "/v1/volume/csi/"+escape(id)+"/delete", nil, header, nil, nil)
}

// secretsHeader is the X-Berth-CSI-Secrets header carrying secrets; nil
// when there are none.
func secretsHeader(secrets map[string]string) (http.Header, error) {
	if len(secrets) == 0 {
		return nil, nil
	}
	hv, err := encodeSecrets(secrets)
	if err != nil {
		return nil, err
	}
	return http.Header{HeaderCSISecrets: []string{hv}}, nil
}

// encodeSecrets writes secrets as the X-Berth-CSI-Secrets header's value,
// keys sorted. Errors name the key, never the value.
func encodeSecrets(secrets map[string]string) (string, error) {
	keys := make([]string, 0, len(secrets))
	for k := range secrets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, len(keys))
	for i, k := range keys {
		val := secrets[k]
		switch {
		case strings.TrimSpace(k) == "":
			return "", fmt.Errorf("a secret has an empty key")
		case k != strings.TrimSpace(k):
			return "", fmt.Errorf("secret key %q has spaces around it", k)
		case strings.ContainsAny(k, "=,"):
			return "", fmt.Errorf("secret key %q holds '=' or ','; the %s header cannot carry it", k, HeaderCSISecrets)
		case strings.Contains(val, ","):
			return "", fmt.Errorf("the value of secret %q holds ','; the %s header cannot carry it", k, HeaderCSISecrets)
		case strings.TrimRight(val, " \t") != val:
			return "", fmt.Errorf("the value of secret %q ends in a space, which the %s header would lose", k, HeaderCSISecrets)
		case !validHeaderText(k) || !validHeaderText(val):
			return "", fmt.Errorf("secret %q holds a control character; the %s header cannot carry it", k, HeaderCSISecrets)
		}
		pairs[i] = k + "=" + val
	}
	return strings.Join(pairs, ","), nil
}

// validHeaderText reports whether s may appear in a header value: no
// control characters but tab.
func validHeaderText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
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
