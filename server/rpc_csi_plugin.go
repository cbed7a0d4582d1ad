package server

import (
	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// CSIPlugin serves plugin reads and deletion.
type CSIPlugin struct{ srv *Server }

// List lists plugins with their health counts.
func (p *CSIPlugin) List(args *structs.CSIPluginListRequest, reply *structs.CSIPluginListResponse) error {
	return p.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		iter, err := st.CSIPluginsByIDPrefix(ws, args.Prefix)
		if err != nil {
			return err
		}
		reply.Plugins = []*structs.CSIPluginListStub{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			reply.Plugins = append(reply.Plugins, raw.(*structs.CSIPlugin).Stub()) // the row holds its counts
		}
		reply.Index, err = maxIndex(st, state.TableCSIPlugins)
		return err
	})
}

// Get reads one plugin with a page of its instances and their plugin
// tasks' allocations; Plugin is nil when absent. A blocking Get wakes for
// this plugin's row (which every change of one of its instances rewrites)
// and the page's allocations, not for every node write.
func (p *CSIPlugin) Get(args *structs.CSIPluginGetRequest, reply *structs.CSIPluginGetResponse) error {
	if args.ID == "" {
		return structs.NewError(structs.CodeBadRequest, "plugin get: missing plugin ID")
	}
	if args.PerPage < 0 {
		return structs.NewError(structs.CodeBadRequest, "plugin %q: per_page must not be negative (got %d)", args.ID, args.PerPage)
	}
	a, _, err := p.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	return p.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		plug, next, err := st.CSIPluginPage(ws, args.ID, args.NextToken, args.PerPage)
		if err != nil {
			return err
		}
		reply.Plugin, reply.NextToken = plug, next
		if plug == nil {
			reply.Index, err = maxIndex(st, state.TableCSIPlugins)
			return err
		}
		reply.Index = plug.ModifyIndex
		for _, a := range plug.Allocations {
			reply.Index = max(reply.Index, a.ModifyIndex)
		}
		plug.Allocations = readableAllocs(a, plug.Allocations)
		return nil
	})
}

// Delete removes a plugin that nothing uses any more; it needs operator
// write (the plugin policy reads only).
func (p *CSIPlugin) Delete(args *structs.CSIPluginDeleteRequest, reply *structs.CSIPluginDeleteResponse) error {
	if args.ID == "" {
		return structs.NewError(structs.CodeBadRequest, "plugin delete: missing plugin ID")
	}
	_, index, err := raftApply[any](p.srv, structs.CSIPluginDeleteRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// readableAllocs keeps the allocations a may read: read-job in their
// namespace (a plugin's allocations span namespaces; plugin read alone
// does not show what runs in them).
func readableAllocs(a *acl.ACL, allocs []*structs.AllocListStub) []*structs.AllocListStub {
	out := make([]*structs.AllocListStub, 0, len(allocs))
	for _, alloc := range allocs {
		if a.AllowNamespaceOperation(alloc.Namespace, acl.CapReadJob) {
			out = append(out, alloc)
		}
	}
	return out
}
