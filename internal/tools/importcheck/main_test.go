package main

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

func TestForbidden(t *testing.T) {
	cases := []struct {
		name, self, imp string
		test            bool
		wantBad         bool
	}{
		{"state may import structs", "state", module + "/structs", false, false},
		{"structs is a leaf", "structs", module + "/state", false, true},
		{"state may not import fsm", "state", module + "/fsm", false, true},
		{"client may not import server", "client", module + "/server", false, true},
		{"client may not import state", "client/pluginmanager", module + "/state", false, true},
		{"client subpackages share", "client/pluginmanager", module + "/client/csi", false, false},
		{"grpc outside client/csi", "client/pluginmanager", "google.golang.org/grpc", false, true},
		{"grpc in client/csi", "client/csi", "google.golang.org/grpc", false, false},
		{"csi spec in the plugin", "cmd/berth-hostpath", "github.com/container-storage-interface/spec/lib/go/csi", false, false},
		{"server composes", "server", module + "/fsm", false, false},
		{"fsm may not import server", "fsm", module + "/server", false, true},
		{"tests may use harnesses", "fsm", module + "/state/statetest", true, false},
		{"production code may not use harnesses", "fsm", module + "/state/statetest", false, true},
		{"api stays a client", "api", module + "/server", false, true},
		{"cmd may import anything", "cmd/berth/internal/agent", module + "/server", false, false},
		{"the chaos harness may import anything", "harness/chaos", module + "/server/servertest", false, false},
		{"the chaos checkers are a leaf", "harness/chaos/check", module + "/structs", false, true},
		{"the load tool may import anything", "harness/loadtest", module + "/client/csi", false, false},
		{"the integration tests may import anything", "harness/integration", module + "/server", true, false},
		{"a harness may import another", "harness/loadtest", module + "/harness/agentproc", false, false},
		{"nothing imports the load tool", "server", module + "/harness/loadtest", false, true},
		{"no test imports the load tool, though its name ends in test", "server", module + "/harness/loadtest", true, true},
		{"not even cmd imports a harness", "cmd/berth", module + "/harness/agentproc", false, true},
		{"no internal/ library imports a harness", "internal/testlog", module + "/harness/agentproc", true, true},
		{"internal/ libraries import one another", "internal/clock/clocktest", module + "/internal/clock", false, false},
		{"internal/ libraries stay below structs", "internal/backoff", module + "/structs", false, true},
		{"internal/ libraries stay below server", "internal/telemetry", module + "/server", false, true},
		{"internal/ libraries' tests stay below too", "internal/clock", module + "/state/statetest", true, true},
		{"an unknown internal/ library is named", "internal/newlib", module + "/internal/backoff", false, true},
		{"an unknown harness is named", "harness/newharness", module + "/structs", false, true},
		{"unknown package is named", "newpkg", module + "/structs", false, true},
		{"stdlib is fine", "structs", "fmt", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			why := forbidden(tc.self, tc.imp, tc.test)
			must.EqOp(t, tc.wantBad, why != "", must.Sprintf("forbidden(%q, %q) = %q", tc.self, tc.imp, why))
		})
	}
}

func TestCheck_NamesEveryEdge(t *testing.T) {
	in := `{"ImportPath":"` + module + `/state","Imports":["fmt","` + module + `/server"]}
{"ImportPath":"` + module + `/structs","Imports":["fmt"],"TestImports":["` + module + `/state"]}`
	bad, err := check(strings.NewReader(in))
	must.NoError(t, err)
	must.SliceLen(t, 2, bad)
	must.StrContains(t, bad[0], "state imports "+module+"/server")
	must.StrContains(t, bad[1], "structs (tests) import "+module+"/state")
}

func TestCheck_NamesLayerEdges(t *testing.T) {
	in := `{"ImportPath":"` + module + `/server","Imports":["` + module + `/harness/agentproc"]}
{"ImportPath":"` + module + `/internal/backoff","Imports":["` + module + `/client"]}`
	bad, err := check(strings.NewReader(in))
	must.NoError(t, err)
	must.SliceLen(t, 2, bad)
	must.StrContains(t, bad[0], "internal/backoff imports "+module+"/client: internal/ holds leaf libraries")
	must.StrContains(t, bad[1], "server imports "+module+"/harness/agentproc: harness/ is a layer of its own")
}

// TestAllowed_KeepsLayers checks the table against the layers: no row
// outside harness/ names a harness, and an internal/ row names only
// internal/ packages, so that no row reads as allowing what forbidden
// refuses.
func TestAllowed_KeepsLayers(t *testing.T) {
	for self, rule := range allowed {
		for _, a := range rule {
			target, _ := strings.CutSuffix(a, "/...")
			if !under(self, harnessDir) {
				must.False(t, under(target, harnessDir), must.Sprintf("%s may not import the harness %s", self, a))
			}
			if under(self, internalDir) {
				must.True(t, under(target, internalDir), must.Sprintf("the internal/ library %s may not import %s", self, a))
			}
		}
	}
}
