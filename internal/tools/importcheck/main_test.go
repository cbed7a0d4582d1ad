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
		{"the chaos harness may import anything", "internal/chaos", module + "/server/servertest", false, false},
		{"the chaos checkers are a leaf", "internal/chaos/check", module + "/structs", false, true},
		{"the load tool may import anything", "internal/loadtest", module + "/client/csi", false, false},
		{"nothing imports the load tool", "server", module + "/internal/loadtest", false, true},
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
