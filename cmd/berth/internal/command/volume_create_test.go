package command

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

const createSpec = `id           = "data"
type         = "csi"
plugin_id    = "hostpath"
capacity_min = "1GiB"
capacity_max = "2GiB"
snapshot_id  = "snap-1"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
topology_request {
  required {
    topology { segments = { zone = "a" } }
  }
}
secrets { token = "s3cret" }
`

func TestVolumeCreate_Run(t *testing.T) {
	f := newFixture(t)
	good := writeSpec(t, "data.hcl", createSpec)
	noCapacity := writeSpec(t, "scratch.json", `{"id": "scratch", "type": "csi", "plugin_id": "hostpath",
 "capability": {"access_mode": "multi-node-multi-writer", "attachment_mode": "file-system"}}`)
	withExternal := writeSpec(t, "ext.hcl", strings.Replace(createSpec, "capacity_min", "external_id  = \"vol-0001\"\ncapacity_min", 1))
	both := writeSpec(t, "both.hcl", strings.Replace(createSpec, "snapshot_id  = \"snap-1\"", "snapshot_id  = \"snap-1\"\nclone_id     = \"vol-0001\"", 1))
	badSize := writeSpec(t, "size.hcl", strings.Replace(createSpec, `"2GiB"`, `"10QB"`, 1))
	minAboveMax := writeSpec(t, "minmax.hcl", strings.Replace(createSpec, `"1GiB"`, `"3GiB"`, 1))
	fail := writeSpec(t, "fail.hcl", strings.Replace(createSpec, `id           = "data"`, `id           = "fail"`, 1))

	cases := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantStdout string
		wantStderr string // "" for none
		wantWrite  bool
	}{
		{"creates", []string{"volume", "create", good}, "", 0,
			"==> Creating volume \"data\" with plugin \"hostpath\"...\n" +
				"    Created \"data\": external ID vol-9f3a, capacity 1.0 GiB\n", "", true},
		{"from stdin", []string{"volume", "create", "-"}, createSpec, 0,
			"==> Creating volume \"data\" with plugin \"hostpath\"...\n" +
				"    Created \"data\": external ID vol-9f3a, capacity 1.0 GiB\n", "", true},
		{"no capacity reported", []string{"volume", "create", noCapacity}, "", 0,
			"==> Creating volume \"scratch\" with plugin \"hostpath\"...\n" +
				"    Created \"scratch\": external ID vol-9f3a, capacity not reported by the plugin\n", "", true},
		{"server fails", []string{"volume", "create", fail}, "", 1,
			"==> Creating volume \"fail\" with plugin \"hostpath\"...\n",
			"Error: create volume \"fail\": plugin \"hostpath\" has no healthy controller; run \"berth plugin status hostpath\" and start its controller\n",
			true},
		{"external_id refused", []string{"volume", "create", withExternal}, "", 1, "",
			"Error: " + withExternal + ":4: external_id: not allowed when creating a volume; the plugin makes the volume and its external ID " +
				"(to add a volume that already exists, remove external_id and use \"berth volume register\")\n", false},
		{"snapshot and clone", []string{"volume", "create", both}, "", 1, "",
			"Error: " + both + ":7: clone_id: set snapshot_id or clone_id, not both (snapshot_id is set at line 6)", false},
		{"bad size", []string{"volume", "create", badSize}, "", 1, "",
			"Error: " + badSize + `:5: capacity_max: "10QB" has an unknown unit "QB"`, false},
		{"min above max", []string{"volume", "create", minAboveMax}, "", 1, "",
			"Error: " + minAboveMax + ":4: capacity_min: 3221225472 bytes is more than capacity_max (2147483648 bytes)", false},
		{"spec error on stdin", []string{"volume", "create", "-"}, "id = \"data\"\nexternal_id = \"x\"\n", 1, "",
			"Error: the volume spec has 4 problems:\n<stdin>:1: plugin_id: missing", false},
		{"missing file", []string{"volume", "create", filepath.Join(t.TempDir(), "nope.hcl")}, "", 1, "",
			"nope.hcl: no such file or directory; check the file's path", false},
		{"no file", []string{"volume", "create"}, "", 2, "",
			"Error: this command takes one argument\n\nUsage: berth volume create [options] <file>", false},
		{"two files", []string{"volume", "create", good, good}, "", 2, "", "this command takes one argument, got 2", false},
		{"unknown flag", []string{"volume", "create", "-force", good}, "", 2, "",
			"Error: flag provided but not defined: -force\n\nUsage: berth volume create", false},
		{"help", []string{"volume", "create", "-h"}, "", 0, "Usage: berth volume create [options] <file>", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.reset()
			r := runCLI(t, f.srv.URL, tc.stdin, tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			if tc.name == "help" {
				must.StrContains(t, r.stdout, tc.wantStdout)
				must.StrContains(t, r.stdout, "must not set external_id")
			} else {
				must.EqOp(t, tc.wantStdout, r.stdout)
			}
			must.StrNotContains(t, r.stdout+r.stderr, "s3cret")
			w, wrote := f.lastWrite()
			must.EqOp(t, tc.wantWrite, wrote)
			if wrote {
				must.EqOp(t, "PUT", w.method)
				must.StrHasSuffix(t, "/create", w.path)
			}
		})
	}
}

func TestVolumeCreate_SendsSpecWithSecrets(t *testing.T) {
	f := newFixture(t)
	r := runCLI(t, f.srv.URL, "", "volume", "create", writeSpec(t, "data.hcl", createSpec))
	must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
	w, ok := f.lastWrite()
	must.True(t, ok)
	must.EqOp(t, "PUT", w.method)
	must.EqOp(t, "/v1/volume/csi/data/create", w.path)
	var req structs.CSIVolumeCreateRequest
	must.NoError(t, json.Unmarshal([]byte(w.body), &req))
	must.Len(t, 1, req.Volumes)
	v := req.Volumes[0]
	must.EqOp(t, "s3cret", v.Secrets["token"])
	must.EqOp(t, int64(1<<30), v.RequestedCapacityMin)
	must.EqOp(t, int64(2<<30), v.RequestedCapacityMax)
	must.EqOp(t, "snap-1", v.SnapshotID)
	must.EqOp(t, "", v.ExternalID)
	must.Eq(t, []*structs.CSITopology{{Segments: map[string]string{"zone": "a"}}}, v.Topologies)
	must.EqOp(t, structs.CSIVolumeAccessModeSingleNodeWriter, v.RequestedCapabilities[0].AccessMode)
	must.Nil(t, w.secrets)
}

func TestVolumeCreate_PrintsProgressWhileWaiting(t *testing.T) {
	old := createProgressEvery
	createProgressEvery = 20 * time.Millisecond
	t.Cleanup(func() { createProgressEvery = old })

	f := newFixture(t)
	spec := strings.Replace(createSpec, `id           = "data"`, `id           = "slow"`, 1)
	r := runCLI(t, f.srv.URL, "", "volume", "create", writeSpec(t, "slow.hcl", spec))
	must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	must.Greater(t, 2, len(lines), must.Sprint(r.stdout))
	must.EqOp(t, `==> Creating volume "slow" with plugin "hostpath"...`, lines[0])
	for _, l := range lines[1 : len(lines)-1] {
		must.StrHasPrefix(t, `    Still waiting for plugin "hostpath" to create "slow" (`, l)
	}
	must.EqOp(t, `    Created "slow": external ID vol-9f3a, capacity 1.0 GiB`, lines[len(lines)-1])
}

func TestVolumeCreate_Unreachable(t *testing.T) {
	r := runCLI(t, "http://127.0.0.1:1", "", "volume", "create", writeSpec(t, "data.hcl", createSpec))
	must.EqOp(t, 1, r.code)
	must.EqOp(t, "==> Creating volume \"data\" with plugin \"hostpath\"...\n", r.stdout)
	must.StrContains(t, r.stderr, `Error: create volume "data": cannot reach berth at http://127.0.0.1:1`)
	must.StrNotContains(t, r.stderr, "s3cret")
}

func TestVolumeDelete_Run(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name        string
		args        []string
		wantCode    int
		wantStdout  string
		wantStderr  string // "" for none
		wantPath    string // "" for no write
		wantSecrets []string
	}{
		{"by full ID", []string{"volume", "delete", "logs"}, 0, "Deleted volume \"logs\"\n", "", "/v1/volume/csi/logs/delete", nil},
		{"by prefix", []string{"volume", "delete", "lo"}, 0, "Deleted volume \"logs\"\n", "", "/v1/volume/csi/logs/delete", nil},
		{"exact ID beats longer match", []string{"volume", "delete", "data2"}, 0, "Deleted volume \"data2\"\n", "", "/v1/volume/csi/data2/delete", nil},
		{"one secret", []string{"volume", "delete", "-secret", "token=s3cret", "logs"}, 0, "Deleted volume \"logs\"\n", "",
			"/v1/volume/csi/logs/delete", []string{"token=s3cret"}},
		{"secrets with '=' and after the ID", []string{"volume", "delete", "-secret=user=admin", "logs", "-secret", "token=YWJj=="}, 0,
			"Deleted volume \"logs\"\n", "", "/v1/volume/csi/logs/delete", []string{"token=YWJj==,user=admin"}},
		{"empty value", []string{"volume", "delete", "-secret", "token=", "logs"}, 0, "Deleted volume \"logs\"\n", "",
			"/v1/volume/csi/logs/delete", []string{"token="}},
		{"claimed", []string{"volume", "delete", "-secret", "token=s3cret", "data"}, 1, "",
			"Error: volume \"data\" is claimed by alloc " + alloc1 + "; stop the allocation before deleting the volume\n",
			"/v1/volume/csi/data/delete", []string{"token=s3cret"}},
		{"ambiguous", []string{"volume", "delete", "da"}, 1, "", `prefix "da" matches 2 volumes: data, data2`, "", nil},
		{"not found", []string{"volume", "delete", "nope"}, 1, "", `volume "nope" not found; run "berth volume status" to list them`, "", nil},
		{"no ID", []string{"volume", "delete"}, 2, "", "Error: this command takes one argument\n\nUsage: berth volume delete [options] <volume>", "", nil},
		{"two IDs", []string{"volume", "delete", "logs", "data"}, 2, "", "this command takes one argument, got 2: logs data", "", nil},
		{"secret without '='", []string{"volume", "delete", "-secret", "s3cret", "logs"}, 2, "",
			"Error: -secret number 1 has no '='; write -secret key=value\n\nUsage: berth volume delete", "", nil},
		{"secret without key", []string{"volume", "delete", "-secret", "a=b", "-secret", "=s3cret", "logs"}, 2, "",
			"Error: -secret number 2 has no key before '='", "", nil},
		{"secret value with ','", []string{"volume", "delete", "-secret", "token=s3,cret", "logs"}, 2, "",
			`Error: -secret "token": the value holds ','; secrets sent with volume delete cannot`, "", nil},
		{"secret twice", []string{"volume", "delete", "-secret", "token=s3cret", "-secret", "token=s3cret2", "logs"}, 2, "",
			`Error: -secret "token" is given twice; give each secret once`, "", nil},
		{"secret flag without value", []string{"volume", "delete", "logs", "-secret"}, 2, "",
			"Error: flag needs an argument: -secret", "", nil},
		{"help", []string{"volume", "delete", "-h"}, 0, "", "", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.reset()
			r := runCLI(t, f.srv.URL, "", tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			if tc.name == "help" {
				must.StrContains(t, r.stdout, "Usage: berth volume delete [options] <volume>")
				must.StrContains(t, r.stdout, "-secret <key>=<value>")
			} else {
				must.EqOp(t, tc.wantStdout, r.stdout)
			}
			must.StrNotContains(t, r.stdout+r.stderr, "s3cret")
			must.StrNotContains(t, r.stdout+r.stderr, "YWJj")
			f.mustLastWrite(t, tc.wantPath != "", fixtureWrite{method: "DELETE", path: tc.wantPath, secrets: tc.wantSecrets})
		})
	}
}
