package server

import (
	"errors"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestJob_Register_PluginNeedsPluginWrite: a plugin ID is cluster-wide, so
// a job with a csi_plugin task needs plugin write as well as
// csi-register-plugin in its namespace. A namespace's write alone (a dev
// team's token) may not run a plugin, which would take over another
// namespace's plugin and receive its volumes' secrets; the refusal names
// the plugin, the task and the policy it needs.
func TestJob_Register_PluginNeedsPluginWrite(t *testing.T) {
	s, mgmt := aclServer(t)
	const nsWrite = "namespace \"dev\" {\n  policy = \"write\"\n}\n"
	const needsWrite = `Permission denied: running plugin "hostpath" (task "plugin") needs plugin policy "write"`
	cases := []struct {
		name  string
		rules string // "" uses the management token
		want  string // "" when the job registers
	}{
		{"namespace write alone", nsWrite, needsWrite},
		{"namespace write and plugin read", nsWrite + "plugin {\n  policy = \"read\"\n}\n", needsWrite},
		{"namespace write, plugin write denied elsewhere", nsWrite + "plugin {\n  policy = \"deny\"\n}\n", needsWrite},
		{"plugin write without csi-register-plugin",
			"namespace \"dev\" {\n  policy = \"read\"\n  capabilities = [\"submit-job\"]\n}\nplugin {\n  policy = \"write\"\n}\n",
			`Permission denied: token lacks capability "csi-register-plugin" in namespace "dev"`},
		{"plugin write without the namespace", "plugin {\n  policy = \"write\"\n}\n",
			`Permission denied: token lacks capability "submit-job" in namespace "dev"`},
		{"namespace write and plugin write", nsWrite + "plugin {\n  policy = \"write\"\n}\n", ""},
		{"management", "", ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			token := mgmt
			if tc.rules != "" {
				token = makeToken(t, s, mgmt, "plugin-"+string(rune('a'+i)), tc.rules)
			}
			job := statetest.PluginJob("plugin-job", "hostpath")
			job.Namespace = "dev"
			job.TaskGroups[0].Tasks[0].Name = "plugin"
			job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
			err := callAs(t, s, token, "Job.Register", &structs.JobRegisterRequest{Job: job,
				WriteRequest: structs.WriteRequest{Namespace: "dev"}}, &structs.JobRegisterResponse{})
			if tc.want == "" {
				must.NoError(t, err)
				return
			}
			must.Error(t, err)
			must.True(t, errors.Is(err, structs.ErrPermissionDenied), must.Sprintf("%v", err))
			must.StrContains(t, err.Error(), tc.want)
		})
	}
}

// TestJob_Register_NamespaceWriteRunsJobsWithoutPlugins: plugin write
// gates plugin tasks only; a namespace's write still runs any other job.
func TestJob_Register_NamespaceWriteRunsJobsWithoutPlugins(t *testing.T) {
	s, mgmt := aclServer(t)
	token := makeToken(t, s, mgmt, "dev", "namespace \"dev\" {\n  policy = \"write\"\n}\n")
	job := statetest.Job("web")
	job.Namespace = "dev"
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
	must.NoError(t, callAs(t, s, token, "Job.Register", &structs.JobRegisterRequest{Job: job,
		WriteRequest: structs.WriteRequest{Namespace: "dev"}}, &structs.JobRegisterResponse{}))
}
