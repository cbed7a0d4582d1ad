package httpapi

import (
	"testing"

	"github.com/berth-csi/berth/structs"
)

func TestHandler_SystemGC(t *testing.T) {
	replies := map[string]any{
		"System.GarbageCollect": &structs.SystemGCResponse{Removed: structs.GCResult{Allocs: 3, Jobs: 1, Nodes: 2},
			WriteMeta: structs.WriteMeta{Index: 61}},
	}
	testRoutes(t, replies, []routeCase{
		{"gc", "PUT", "/v1/system/gc", "", "System.GarbageCollect", "61",
			`{"Removed":{"Allocs":3,"Jobs":1,"Nodes":2,"PastClaims":0},"Index":61}`},
	})
	mustNotAllowed(t, "GET", "/v1/system/gc", "PUT")
	mustNotAllowed(t, "POST", "/v1/system/gc", "PUT")
}
