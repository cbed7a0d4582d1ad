package api

import (
	"net/http"

	"github.com/berth-csi/berth/structs"
)

// System holds the cluster-wide maintenance endpoints.
type System struct{ c *Client }

// System returns the system endpoints.
func (c *Client) System() *System { return &System{c} }

// GarbageCollect has the leader collect garbage now, with every threshold
// at zero: allocations over on their client (unless they hold a claim
// that is not freed), stopped jobs with no allocation left, down nodes
// and freed past claims. It answers what was removed. It needs a
// management token when ACLs are on.
func (s *System) GarbageCollect() (*structs.SystemGCResponse, *WriteMeta, error) {
	var out structs.SystemGCResponse
	wm, err := s.c.write(http.MethodPut, "/v1/system/gc", nil, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}
