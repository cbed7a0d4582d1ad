package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/berth-csi/berth/client/allocrunner"
	"github.com/berth-csi/berth/client/internal/beneath"
	"github.com/berth-csi/berth/structs"
)

// maxLogRead bounds one Logs reply, well under the RPC body limit; a
// caller pages on with Offset.
const maxLogRead = 16 << 20

// clientAllocations answers the servers' calls about this node's
// allocations (ClientAllocations.*).
type clientAllocations struct{ c *Client }

// Logs reads a task's stdout or stderr log from Offset, at most Limit
// bytes (0: to the end, up to maxLogRead), with the log's size.
func (e *clientAllocations) Logs(_ context.Context, args *structs.ClientAllocLogsRequest, reply *structs.ClientAllocLogsResponse) error {
	kind := args.Kind
	if kind == "" {
		kind = allocrunner.LogStdout
	}
	if kind != allocrunner.LogStdout && kind != allocrunner.LogStderr {
		return structs.NewError(structs.CodeBadRequest, "alloc %s task %q: log kind %q is not stdout or stderr", args.AllocID, args.Task, args.Kind)
	}
	if args.Offset < 0 || args.Limit < 0 {
		return structs.NewError(structs.CodeBadRequest, "alloc %s task %q: offset and limit must not be negative", args.AllocID, args.Task)
	}
	if err := allocrunner.CheckName("alloc ID", args.AllocID); err != nil {
		return structs.NewError(structs.CodeBadRequest, "%v", err)
	}
	if err := allocrunner.CheckName("task name", args.Task); err != nil {
		return structs.NewError(structs.CodeBadRequest, "alloc %s: %v", args.AllocID, err)
	}
	allocDir := allocrunner.AllocDir(e.c.config.DataDir, args.AllocID)
	if _, err := os.Stat(allocDir); errors.Is(err, os.ErrNotExist) {
		return structs.NewError(structs.CodeNotFound, "alloc %s is not on node %s", args.AllocID, e.c.nodeID)
	}
	if r := e.c.allocs.runner(args.AllocID); r != nil && !r.HasTask(args.Task) {
		return structs.NewError(structs.CodeNotFound, "alloc %s has no task %q", args.AllocID, args.Task)
	}
	f, err := allocrunner.OpenLog(allocDir, args.Task, kind)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return structs.NewError(structs.CodeNotFound, "alloc %s task %q has no %s log (it has not started)", args.AllocID, args.Task, kind)
	case errors.Is(err, beneath.ErrLink) || errors.Is(err, beneath.ErrNotRegular) || errors.Is(err, beneath.ErrNotDir):
		// Something a task put in place of its log: refused, not followed.
		e.c.logger.Warn("a task's log is not berth's file; not read", "alloc_id", args.AllocID, "task", args.Task, "error", err)
		return structs.NewError(structs.CodeConflict, "alloc %s task %q: %s log: %v", args.AllocID, args.Task, kind, err)
	case err != nil:
		return fmt.Errorf("alloc %s task %q: %w", args.AllocID, args.Task, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("alloc %s task %q: %w", args.AllocID, args.Task, err)
	}
	reply.Size = fi.Size()
	n := reply.Size - args.Offset
	if args.Limit > 0 {
		n = min(n, args.Limit)
	}
	n = min(n, maxLogRead)
	if n <= 0 {
		reply.Data = []byte{}
		return nil
	}
	reply.Data = make([]byte, n)
	read, err := f.ReadAt(reply.Data, args.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("alloc %s task %q: read %s log: %w", args.AllocID, args.Task, kind, err)
	}
	reply.Data = reply.Data[:read]
	return nil
}
