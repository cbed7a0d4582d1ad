package volumemanager

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/atomicfile"
	"github.com/berth-csi/berth/structs"
)

func TestLoadUsage_Refuses(t *testing.T) {
	cases := []struct {
		name, content, msg string
	}{
		{"not json", "{", "unexpected EOF"},
		{"unknown field", `{"version":1,"volumes":[],"extra":1}`, `json: unknown field "extra"`},
		{"other version", `{"version":2,"volumes":[]}`, "format version 2, this client reads version 1"},
		{"no IDs", `{"version":1,"volumes":[{"plugin_id":"p"}]}`, "volume 1 lacks its plugin, volume or external volume ID"},
		{"twice", `{"version":1,"volumes":[{"plugin_id":"p","volume_id":"v","external_volume_id":"x"},{"plugin_id":"p","volume_id":"v","external_volume_id":"x"}]}`,
			`volume "v" of plugin "p" is listed twice`},
		{"unknown stage", `{"version":1,"volumes":[{"plugin_id":"p","volume_id":"v","external_volume_id":"x","stage":9}]}`, `volume "v": unknown stage state 9`},
		{"staged without path", `{"version":1,"volumes":[{"plugin_id":"p","volume_id":"v","external_volume_id":"x","stage":2}]}`, `volume "v" is staged without a staging path`},
		{"bad alloc", `{"version":1,"volumes":[{"plugin_id":"p","volume_id":"v","external_volume_id":"x","allocs":{"a1":{"state":0}}}]}`,
			`volume "v": alloc a1 has no valid state or target path`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "client", "csi", "volumes.json")
			must.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
			must.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
			_, err := New(Config{DataDir: dir, Registry: newRegistry(t)})
			must.ErrorIs(t, err, ErrCorruptUsage)
			must.ErrorContains(t, err, path+": "+tc.msg)
		})
	}
}

func TestMarshalUsage_RoundTrip(t *testing.T) {
	usage := map[volumeKey]*volumeUsage{}
	for _, u := range []*volumeUsage{
		{PluginID: "b", VolumeID: "v", ExternalVolumeID: "x2", Allocs: map[string]*allocUsage{}},
		{PluginID: "a", VolumeID: "w", ExternalVolumeID: "x1", AttachmentMode: structs.CSIVolumeAttachmentModeBlockDevice,
			Stage: stageUnstaging, StagingPath: "/h/s", PluginStagingPath: "/p/s", Allocs: map[string]*allocUsage{
				"a1": {State: publishUnpublishing, AccessMode: structs.CSIVolumeAccessModeSingleNodeReader, ReadOnly: true, TargetPath: "/h/t", PluginTargetPath: "/p/t"},
			}},
	} {
		usage[u.key()] = u
	}
	b, err := marshalUsage(usage)
	must.NoError(t, err)
	again, err := marshalUsage(usage)
	must.NoError(t, err)
	must.Eq(t, string(b), string(again), must.Sprint("the same usage writes the same bytes"))

	path := filepath.Join(t.TempDir(), "volumes.json")
	must.NoError(t, atomicfile.Write(path, b))
	got, err := loadUsage(path)
	must.NoError(t, err)
	must.Eq(t, usage, got)
	f := readUsageFile(t, path)
	must.Eq(t, "a", f.Volumes[0].PluginID, must.Sprint("sorted by plugin, then volume"))
}

func TestNew_Validates(t *testing.T) {
	_, err := New(Config{})
	must.ErrorContains(t, err, "volumemanager: a data dir is required\nvolumemanager: a plugin registry is required")
	t.Chdir(t.TempDir())
	m, err := New(Config{DataDir: "relative", Registry: newRegistry(t)})
	must.NoError(t, err)
	must.True(t, filepath.IsAbs(m.dataDir), must.Sprint("the plugin is always given absolute paths"))
}
