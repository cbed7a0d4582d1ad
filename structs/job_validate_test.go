package structs

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestJob_Validate_PluginID: a plugin ID names a dir on every client, so
// one that could leave its parent dir is refused.
func TestJob_Validate_PluginID(t *testing.T) {
	job := func(id string) *Job {
		return &Job{ID: "p", Type: JobTypeSystem, TaskGroups: []*TaskGroup{{Name: "g", Count: 1, Tasks: []*Task{{
			Name: "t", Driver: "exec", Config: map[string]any{"command": "/bin/true"},
			CSIPluginConfig: &TaskCSIPluginConfig{ID: id, Type: CSIPluginTypeNode, MountDir: "/csi"}}}}}}
	}
	must.NoError(t, job("hostpath").Validate())
	for _, id := range []string{"..", ".hidden", "a/b", "a b"} {
		must.ErrorContains(t, job(id).Validate(), `csi_plugin: id "`+id+`" must be a plain name`)
	}
}
