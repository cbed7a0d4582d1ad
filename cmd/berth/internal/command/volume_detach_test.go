package command

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

func TestVolumeDetach_Run(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
		wantWrite  string // path?query of the DELETE; "" for none
	}{
		{"a node that left the cluster, by a prefix its claim names", []string{"volume", "detach", "data2", "dead"}, 0,
			"Releasing the claims of volume \"data2\" on node \"dead5eed\": allocation a11c0004\n" +
				"\"berth volume status data2\" shows each claim until it is freed\n", "",
			"/v1/volume/csi/data2/detach?node=" + goneNode},
		{"a listed node, volume by prefix", []string{"volume", "detach", "data", "8a1c2"}, 0,
			"Releasing the claims of volume \"data\" on node \"8a1c2f3e\": allocation a11c0001\n", "",
			"/v1/volume/csi/data/detach?node=" + node1},
		{"no claims there", []string{"volume", "detach", "logs", "f00d"}, 0,
			"Volume \"logs\" has no claims on node \"f00dcafe\" to release\n", "",
			"/v1/volume/csi/logs/detach?node=" + node3},
		{"ambiguous node", []string{"volume", "detach", "data", "8a1c"}, 1, "",
			`Error: prefix "8a1c" matches 2 nodes: ` + node1 + ", " + node2 + "; give more of the ID\n", ""},
		{"unknown node", []string{"volume", "detach", "data", "beef"}, 1, "",
			`Error: node "beef" not found; run "berth node status" to list them` + "\n", ""},
		{"unknown volume", []string{"volume", "detach", "nope", "8a1c2"}, 1, "",
			`Error: volume "nope" not found; run "berth volume status" to list them` + "\n", ""},
		{"one argument", []string{"volume", "detach", "data"}, 2, "",
			"Error: this command takes 2 arguments\n\nUsage: berth volume detach [options] <volume> <node>", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.reset()
			r := runCLI(t, f.srv.URL, "", tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			must.StrContains(t, r.stdout, tc.wantStdout)
			path, query, _ := strings.Cut(tc.wantWrite, "?")
			f.mustLastWrite(t, tc.wantWrite != "", fixtureWrite{method: "DELETE", path: path, query: query})
		})
	}
}

// TestVolumeDetach_ReleasingLine: several released allocations are listed
// in the order of their IDs, whatever order the servers answered in.
func TestVolumeDetach_ReleasingLine(t *testing.T) {
	for _, released := range [][]string{{alloc2, alloc1}, {alloc1, alloc2}} {
		must.EqOp(t, "Releasing the claims of volume \"data\" on node \"8a1c2f3e\": allocations a11c0001, a11c0002\n",
			releasingLine("data", node1, released))
	}
}
