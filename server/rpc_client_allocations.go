package server

import (
	"context"

	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/structs"
)

// ClientAllocations relays allocation calls to the client that runs the
// allocation.
type ClientAllocations struct{ srv *Server }

// Logs reads a task's log from the client running its allocation.
func (c *ClientAllocations) Logs(ctx context.Context, args *structs.ClientAllocLogsRequest, reply *structs.ClientAllocLogsResponse) error {
	alloc, err := c.srv.State().AllocByID(nil, args.AllocID)
	if err != nil {
		return err
	}
	if alloc == nil {
		return structs.NewError(structs.CodeNotFound, "alloc %s not found; list allocations with `berth job status JOB`", args.AllocID)
	}
	if err := c.srv.allowNamespace(args.AuthToken, alloc.Namespace, acl.CapReadLogs); err != nil {
		return err
	}
	args.NodeID = alloc.NodeID
	ctx, cancel := context.WithTimeout(ctx, clientCallTimeout)
	defer cancel()
	return c.srv.callClient(ctx, args.NodeID, "ClientAllocations.Logs", "ClientAllocations.Logs", args, args, reply)
}
