package structs

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

func redactedVolume() *CSIVolume {
	return &CSIVolume{
		ID:           "data",
		PluginID:     "hostpath",
		ExternalID:   "ext-data",
		Secrets:      CSISecrets{"token": "hunter2"},
		MountOptions: &CSIMountOptions{FSType: "ext4", MountFlags: []string{"password=hunter2"}},
		RequestedCapabilities: []*CSIVolumeCapability{{
			AccessMode: CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: CSIVolumeAttachmentModeFilesystem,
		}},
	}
}

func TestCSIVolume_Redaction_PeopleForms(t *testing.T) {
	vol := redactedVolume()
	js, err := json.Marshal(vol)
	must.NoError(t, err)
	forms := map[string]string{
		"json":             string(js),
		"secrets %v":       fmt.Sprintf("%v", vol.Secrets),
		"secrets %#v":      fmt.Sprintf("%#v", vol.Secrets),
		"secrets %s":       vol.Secrets.String(),
		"mount options %v": fmt.Sprintf("%v", vol.MountOptions),
		"mount %#v":        fmt.Sprintf("%#v", vol.MountOptions),
		"sanitized json":   mustJSON(t, vol.Sanitized()),
	}
	for name, s := range forms {
		t.Run(name, func(t *testing.T) {
			must.StrNotContains(t, s, "hunter2")
		})
	}
	must.StrContains(t, forms["json"], Redacted)
	must.StrNotContains(t, forms["sanitized json"], `"token"`, must.Sprint("API responses carry no secrets at all"))
}

func TestCSIVolume_Redaction_WireKeepsValues(t *testing.T) {
	buf, err := Encode(CSIVolumeRegisterRequestType, &CSIVolumeRegisterRequest{Volumes: []*CSIVolume{redactedVolume()}})
	must.NoError(t, err)
	var out CSIVolumeRegisterRequest
	must.NoError(t, Decode(buf[1:], &out))
	must.Eq(t, "hunter2", out.Volumes[0].Secrets["token"])
	must.Eq(t, []string{"password=hunter2"}, out.Volumes[0].MountOptions.MountFlags)
}

func TestCSIVolume_Redaction_JSONInAccepted(t *testing.T) {
	var vol CSIVolume
	must.NoError(t, json.Unmarshal([]byte(`{"ID":"v","Secrets":{"token":"s3"},"MountOptions":{"MountFlags":["ro"]}}`), &vol))
	must.Eq(t, "s3", vol.Secrets["token"])
	must.Eq(t, []string{"ro"}, vol.MountOptions.MountFlags)
}

func TestCSIVolumeAccessMode_Strings(t *testing.T) {
	must.Eq(t, "single-node-writer", CSIVolumeAccessModeSingleNodeWriter.String())
	must.Eq(t, "unknown", CSIVolumeAccessModeUnknown.String())
	must.Eq(t, `CSIVolumeAccessMode("multi-node-reader-only")`, fmt.Sprintf("%#v", CSIVolumeAccessModeMultiNodeReader))
	must.Eq(t, "file-system", CSIVolumeAttachmentModeFilesystem.String())
	must.Eq(t, `CSIVolumeAttachmentMode("block-device")`, fmt.Sprintf("%#v", CSIVolumeAttachmentModeBlockDevice))
}

func TestCSIVolume_Validate(t *testing.T) {
	cases := []struct {
		name string
		edit func(v *CSIVolume)
		want string
	}{
		{"valid", func(*CSIVolume) {}, ""},
		{"no id", func(v *CSIVolume) { v.ID = "" }, "volume ID is missing"},
		{"slash in id", func(v *CSIVolume) { v.ID = "a/b" }, "must not contain"},
		{"per_alloc id", func(v *CSIVolume) { v.ID = "data[0]" }, ""},
		{"NUL in id", func(v *CSIVolume) { v.ID = "a\x00b" }, `volume ID "a\x00b" must not contain '\x00'`},
		{"dot-dot id", func(v *CSIVolume) { v.ID = ".." }, `volume ID ".." must not start with '.'`},
		{"bad namespace", func(v *CSIVolume) { v.Namespace = "a/b" }, `namespace "a/b" must not contain '/'`},
		{"bad plugin id", func(v *CSIVolume) { v.PluginID = "../x" }, `plugin_id: plugin ID "../x" must not start with '.'`},
		{"null capability", func(v *CSIVolume) { v.RequestedCapabilities = append(v.RequestedCapabilities, nil) }, "capability 2 is null"},
		{"null topology", func(v *CSIVolume) { v.Topologies = []*CSITopology{nil} }, "topology 1 is null"},
		{"no plugin", func(v *CSIVolume) { v.PluginID = "" }, "missing plugin_id"},
		{"no external id", func(v *CSIVolume) { v.ExternalID = "" }, "missing external_id"},
		{"no capability", func(v *CSIVolume) { v.RequestedCapabilities = nil }, "at least one capability"},
		{"bad access mode", func(v *CSIVolume) { v.RequestedCapabilities[0].AccessMode = "single-writer" }, `access_mode "single-writer"`},
		{"bad attachment", func(v *CSIVolume) { v.RequestedCapabilities[0].AttachmentMode = "nfs" }, `attachment_mode "nfs"`},
		{"capacity", func(v *CSIVolume) { v.RequestedCapacityMin, v.RequestedCapacityMax = 10, 5 }, "capacity_min (10)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := redactedVolume()
			tc.edit(v)
			err := v.Validate()
			if tc.want == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, ErrBadRequest)
			must.StrContains(t, err.Error(), tc.want)
			must.True(t, strings.HasPrefix(err.Error(), "volume "), must.Sprint("names the volume"))
		})
	}
}

func TestCSIVolumeClaimState_JSON(t *testing.T) {
	b, err := json.Marshal(CSIVolumeClaimStateNodeDetached)
	must.NoError(t, err)
	must.Eq(t, `"node-detached"`, string(b))
	var s CSIVolumeClaimState
	must.NoError(t, json.Unmarshal([]byte(`"controller-detached"`), &s))
	must.Eq(t, CSIVolumeClaimStateControllerDetached, s)
	must.NoError(t, json.Unmarshal([]byte(`4`), &s))
	must.Eq(t, CSIVolumeClaimStateFreed, s)
	must.Error(t, json.Unmarshal([]byte(`"gone"`), &s))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must.NoError(t, err)
	return string(b)
}
