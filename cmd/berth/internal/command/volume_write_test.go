package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

const registerSpec = `id          = "data"
type        = "csi"
plugin_id   = "hostpath"
external_id = "vol-0001"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
mount_options {
  fs_type     = "ext4"
  mount_flags = ["uid=1000"]
}
secrets { token = "s3cret" }
`

func writeSpec(t *testing.T, name, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	must.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	return path
}

func TestVolumeRegister_Run(t *testing.T) {
	f := newFixture(t)
	good := writeSpec(t, "data.hcl", registerSpec)
	typo := writeSpec(t, "typo.hcl", `id = "data"
type = "csi"
plugin_id = "hostpath"
external_id = "vol-0001"
capability {
  acess_mode = "single-node-writer"
  attachment_mode = "file-system"
}
`)
	noExternal := writeSpec(t, "noext.hcl", `id = "data"
type = "csi"
plugin_id = "hostpath"
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
`)
	refused := writeSpec(t, "bad.json", `{"id": "bad", "type": "csi", "plugin_id": "hostpath", "external_id": "x",
 "capability": {"access_mode": "single-node-writer", "attachment_mode": "file-system"}}`)

	unconfirmed := writeSpec(t, "block.hcl", strings.Replace(registerSpec, `id          = "data"`, `id          = "block"`, 1))

	cases := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantStdout string
		wantStderr string
		wantWrite  bool
	}{
		{"registers", []string{"volume", "register", good}, "", 0, "Volume \"data\" registered\n", "", true},
		{"from stdin", []string{"volume", "register", "-"}, registerSpec, 0, "Volume \"data\" registered\n", "", true},
		{"spec error names file and line", []string{"volume", "register", typo}, "", 1, "",
			"Error: " + typo + ":6: capability: unknown field \"acess_mode\"; did you mean \"access_mode\"?", false},
		{"spec error on stdin", []string{"volume", "register", "-"}, "id = \n", 1, "", "Error: <stdin>:1: ", false},
		{"missing file", []string{"volume", "register", filepath.Join(t.TempDir(), "nope.hcl")}, "", 1, "",
			"nope.hcl: no such file or directory; check the file's path", false},
		{"no external_id", []string{"volume", "register", noExternal}, "", 1, "",
			`Error: ` + noExternal + `:1: external_id: missing; registering needs the storage provider's ID of an existing volume (to have the plugin make a new volume, use "berth volume create")` + "\n", false},
		{"server refuses", []string{"volume", "register", refused}, "", 1, "",
			"Error: volume \"bad\": capability 1: access_mode \"x\" is not valid\n", true},
		{"plugin did not confirm", []string{"volume", "register", unconfirmed}, "", 0, "Volume \"block\" registered\n",
			"Warning: volume \"block\": plugin \"hostpath\" did not confirm its capabilities (block access type is not supported)", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.count()
			r := runCLI(t, f.srv.URL, tc.stdin, tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			must.EqOp(t, tc.wantStdout, r.stdout)
			must.EqOp(t, tc.wantWrite, f.count() > before)
		})
	}
}

func TestVolumeRegister_SendsSecretsUnredacted(t *testing.T) {
	f := newFixture(t)
	r := runCLI(t, f.srv.URL, "", "volume", "register", writeSpec(t, "data.hcl", registerSpec))
	must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
	w, ok := f.lastWrite()
	must.True(t, ok)
	must.EqOp(t, "PUT", w.method)
	must.EqOp(t, "/v1/volume/csi/data", w.path)
	var req structs.CSIVolumeRegisterRequest
	must.NoError(t, json.Unmarshal([]byte(w.body), &req))
	must.Len(t, 1, req.Volumes)
	v := req.Volumes[0]
	must.EqOp(t, "s3cret", v.Secrets["token"])
	must.Eq(t, []string{"uid=1000"}, v.MountOptions.MountFlags)
	must.EqOp(t, "vol-0001", v.ExternalID)
	must.EqOp(t, "data", v.Name)
}

func TestVolumeDeregister_Run(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
		wantPath   string
		wantQuery  string
	}{
		{"by full ID", []string{"volume", "deregister", "logs"}, 0, "Volume \"logs\" deregistered\n", "", "/v1/volume/csi/logs", ""},
		{"by prefix", []string{"volume", "deregister", "lo"}, 0, "Volume \"logs\" deregistered\n", "", "/v1/volume/csi/logs", ""},
		{"exact ID beats longer match", []string{"volume", "deregister", "-force", "data"}, 0, "Volume \"data\" deregistered\n", "", "/v1/volume/csi/data", "force=true"},
		{"force after the ID", []string{"volume", "deregister", "data", "-force"}, 0, "Volume \"data\" deregistered\n", "", "/v1/volume/csi/data", "force=true"},
		{"claimed", []string{"volume", "deregister", "data"}, 1, "",
			"Error: volume \"data\" is claimed by alloc " + alloc1 + "; stop the allocation first\n", "/v1/volume/csi/data", ""},
		{"ambiguous", []string{"volume", "deregister", "da"}, 1, "", `prefix "da" matches 2 volumes: data, data2`, "", ""},
		{"not found", []string{"volume", "deregister", "nope"}, 1, "", `volume "nope" not found`, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.reset()
			r := runCLI(t, f.srv.URL, "", tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			must.EqOp(t, tc.wantStdout, r.stdout)
			f.mustLastWrite(t, tc.wantPath != "", fixtureWrite{method: "DELETE", path: tc.wantPath, query: tc.wantQuery})
		})
	}
}
