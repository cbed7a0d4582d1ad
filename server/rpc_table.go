package server

import (
	"context"

	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/structs"
)

// The servers' RPC methods, each with where it is answered and who may
// call it: one row per method, applied by one interceptor (intercept)
// before the method runs, so no method repeats the preamble. A method the
// servers serve without a row, or a row without a method, fails the
// server's start (checkMethodTable). The ACL walk test
// (acl_walk_test.go) calls every method as each kind of caller and checks
// the answer against the row's reach.

// route says which server answers a method.
type route uint8

const (
	// toLeader: the leader answers writes and consistent reads; a
	// follower answers the reads it has caught up for (read_index.go)
	// and the stale ones, and forwards the rest.
	toLeader route = iota
	// toLeaderList: as toLeader, for a read whose answer is a list: a
	// follower waits longer to serve it from its own state (up to two
	// commit timeouts) before it forwards it, since shipping thousands
	// of rows from the leader costs more than the wait (read_index.go).
	toLeaderList
	// here: the server the call reaches answers it with its own view or
	// relays it to a client (status, members, root keys, the event
	// stream, calls to a client's plugins and logs).
	here
	// routedByHandler: the method forwards the call itself, once it has
	// done what must happen where the call arrived (a node's session
	// tracked, a new node's certificate checked).
	routedByHandler
)

// reach is who gets through a method's guard, in the words of the ACL
// walk: anyone; a token that may read (the read-only policy); only a
// token that may write or the method's own caller (a node's secret,
// another server); a node registering itself.
type reach uint8

const (
	reachAnyone reach = iota
	reachReaders
	reachWriters
	reachNewNodes
)

// guardKind is how a method's caller is checked.
type guardKind uint8

const (
	guardOpen      guardKind = iota // no check
	guardNamespace                  // a capability in the request's namespace
	guardScope                      // a policy outside namespaces (node, plugin, operator, management)
	guardServers                    // another server (allowServerOnly)
	guardHandler                    // the method checks the caller against the object it reads
)

// guard is a method's check of its caller.
type guard struct {
	kind       guardKind
	capability string       // guardNamespace
	scope      []scopeCheck // guardScope: any one passes
	reach      reach        // guardHandler: who passes; the others derive it
	who        string       // guardHandler: who passes, in words
}

func anyone() guard                       { return guard{kind: guardOpen} }
func inNamespace(capability string) guard { return guard{kind: guardNamespace, capability: capability} }
func inScope(checks ...scopeCheck) guard  { return guard{kind: guardScope, scope: checks} }
func serversOnly() guard                  { return guard{kind: guardServers} }
func byHandler(r reach, who string) guard { return guard{kind: guardHandler, reach: r, who: who} }

// readCapabilities and readScopes are what the read-only policy grants:
// a guard of them lets readers through.
var (
	readCapabilities = []string{acl.CapReadJob, acl.CapCSIListVolume, acl.CapCSIReadVolume}
	readScopes       = []string{needNodeRead.name, needPluginList.name, needPluginRead.name, needOperatorRead.name}
)

// reachOf is who passes the guard.
func (g guard) reachOf() reach {
	switch g.kind {
	case guardOpen:
		return reachAnyone
	case guardNamespace:
		for _, c := range readCapabilities {
			if c == g.capability {
				return reachReaders
			}
		}
	case guardScope:
		for _, c := range g.scope {
			for _, r := range readScopes {
				if c.name == r {
					return reachReaders
				}
			}
		}
	case guardHandler:
		return g.reach
	}
	return reachWriters
}

// rpcMethod is one row of the table.
type rpcMethod struct {
	route route
	guard guard
}

// rpcMethods is every RPC method the servers serve.
var rpcMethods = map[string]rpcMethod{
	"ACL.Bootstrap":                      {toLeader, byHandler(reachAnyone, "anyone, once (aclsEnabled; the bootstrap reset file after)")},
	"ACL.DeletePolicies":                 {toLeader, byHandler(reachWriters, "a management token")},
	"ACL.DeleteTokens":                   {toLeader, byHandler(reachWriters, "a management token")},
	"ACL.GetPolicy":                      {toLeader, byHandler(reachReaders, "a management token, or a token whose policies include it")},
	"ACL.GetToken":                       {toLeader, byHandler(reachReaders, "a management token, or the token itself")},
	"ACL.ListPolicies":                   {toLeaderList, byHandler(reachReaders, "any token: a management one lists all, another its own")},
	"ACL.ListTokens":                     {toLeaderList, byHandler(reachWriters, "a management token")},
	"ACL.UpsertPolicies":                 {toLeader, byHandler(reachWriters, "a management token")},
	"ACL.UpsertTokens":                   {toLeader, byHandler(reachWriters, "a management token")},
	"ACL.WhoAmI":                         {toLeader, byHandler(reachAnyone, "anyone: it answers about the caller's own token")},
	"Alloc.Get":                          {toLeader, inNamespace(acl.CapReadJob)},
	"Alloc.List":                         {toLeaderList, inNamespace(acl.CapReadJob)},
	"CSIPlugin.Delete":                   {toLeader, inScope(needOperatorWrite)},
	"CSIPlugin.Get":                      {toLeader, inScope(needPluginRead)},
	"CSIPlugin.List":                     {toLeaderList, inScope(needPluginList)},
	"CSIVolume.Claim":                    {toLeader, byHandler(reachWriters, "csi-mount-volume in the allocation's namespace, or its node's secret (allowClaim)")},
	"CSIVolume.Create":                   {toLeader, inNamespace(acl.CapCSIWriteVolume)},
	"CSIVolume.CreateSnapshot":           {toLeader, inNamespace(acl.CapCSIWriteVolume)},
	"CSIVolume.Delete":                   {toLeader, inNamespace(acl.CapCSIWriteVolume)},
	"CSIVolume.DeleteSnapshot":           {toLeader, inNamespace(acl.CapCSIWriteVolume)},
	"CSIVolume.Deregister":               {toLeader, inNamespace(acl.CapCSIWriteVolume)},
	"CSIVolume.Detach":                   {toLeader, inNamespace(acl.CapCSIWriteVolume)},
	"CSIVolume.Get":                      {toLeader, byHandler(reachReaders, "csi-read-volume, or a node reading a volume its allocation claims (allowGet)")},
	"CSIVolume.List":                     {toLeaderList, inNamespace(acl.CapCSIListVolume)},
	"CSIVolume.ListExternal":             {toLeaderList, inNamespace(acl.CapCSIListVolume)},
	"CSIVolume.ListSnapshots":            {toLeaderList, inNamespace(acl.CapCSIListVolume)},
	"CSIVolume.NodeExpand":               {toLeader, byHandler(reachWriters, "the claiming node's secret, or csi-write-volume")},
	"CSIVolume.Publish":                  {toLeader, byHandler(reachWriters, "the claiming node's secret, or csi-mount-volume (allowPublish)")},
	"CSIVolume.Register":                 {toLeader, inNamespace(acl.CapCSIWriteVolume)},
	"ClientAllocations.Logs":             {here, inNamespace(acl.CapReadLogs)},
	"ClientCSI.ControllerAttachVolume":   {here, serversOnly()},
	"ClientCSI.ControllerCreateSnapshot": {here, serversOnly()},
	"ClientCSI.ControllerCreateVolume":   {here, serversOnly()},
	"ClientCSI.ControllerDeleteSnapshot": {here, serversOnly()},
	"ClientCSI.ControllerDeleteVolume":   {here, serversOnly()},
	"ClientCSI.ControllerDetachVolume":   {here, serversOnly()},
	"ClientCSI.ControllerExpandVolume":   {here, serversOnly()},
	"ClientCSI.ControllerListSnapshots":  {here, serversOnly()},
	"ClientCSI.ControllerListVolumes":    {here, serversOnly()},
	"ClientCSI.ControllerValidateVolume": {here, serversOnly()},
	"ClientCSI.NodeDetachVolume":         {here, serversOnly()},
	"ClientCSI.NodeExpandVolume":         {here, serversOnly()},
	"ClientStatus.Ping":                  {here, serversOnly()},
	"Event.Next":                         {here, byHandler(reachReaders, "each topic's own read capability, per namespace (eventFilter)")},
	"Job.Allocations":                    {toLeaderList, inNamespace(acl.CapReadJob)},
	"Job.Deregister":                     {toLeader, inNamespace(acl.CapSubmitJob)},
	"Job.Get":                            {toLeader, inNamespace(acl.CapReadJob)},
	"Job.List":                           {toLeaderList, inNamespace(acl.CapReadJob)},
	"Job.Plan":                           {toLeader, inNamespace(acl.CapSubmitJob)},
	"Job.Register":                       {toLeader, inNamespace(acl.CapSubmitJob)},
	"Job.Revert":                         {toLeader, inNamespace(acl.CapSubmitJob)},
	"Job.Versions":                       {toLeaderList, inNamespace(acl.CapReadJob)},
	"Keyring.GetKey":                     {here, serversOnly()},
	"Keyring.List":                       {toLeaderList, inScope(needOperatorRead)},
	"Keyring.PutKey":                     {here, serversOnly()},
	"Keyring.Rotate":                     {toLeader, inScope(needOperatorWrite)},
	"Node.Deregister":                    {toLeader, byHandler(reachWriters, "node write")},
	"Node.Get":                           {toLeader, inScope(needNodeRead)},
	"Node.GetClientAllocs":               {toLeader, byHandler(reachWriters, "the node's own secret, or node write (allowNodeClient)")},
	"Node.List":                          {toLeaderList, inScope(needNodeRead)},
	"Node.Register":                      {routedByHandler, byHandler(reachNewNodes, "a new node with any secret; an existing one with its own (allowNodeRegister)")},
	"Node.UpdateAlloc":                   {toLeader, byHandler(reachWriters, "each allocation's node's secret, or node write (allowAllocUpdate)")},
	"Node.UpdateDrain":                   {toLeader, inScope(needNodeWrite)},
	"Node.UpdateEligibility":             {toLeader, inScope(needNodeWrite)},
	"Node.UpdateFingerprint":             {routedByHandler, byHandler(reachWriters, "the node's own secret, or node write (allowNodeClient)")},
	"Node.UpdateStatus":                  {routedByHandler, byHandler(reachWriters, "the node's own secret, or node write (allowNodeClient)")},
	"Operator.RaftGetConfiguration":      {here, inScope(needOperatorRead)},
	"Operator.SnapshotRead":              {toLeader, inScope(needManagement)},
	"Operator.SnapshotRestore":           {toLeader, inScope(needManagement)},
	"Operator.SnapshotSave":              {toLeader, inScope(needManagement)},
	"Operator.SnapshotUpload":            {toLeader, inScope(needManagement)},
	"Status.HasNodeConn":                 {here, byHandler(reachAnyone, "another server by its certificate under TLS; anyone without")},
	"Status.Leader":                      {here, anyone()},
	"Status.Members":                     {here, inScope(needOperatorRead, needNodeRead)},
	"Status.Peers":                       {here, anyone()},
	"Status.ReadIndex":                   {here, anyone()},
	"System.GarbageCollect":              {toLeader, inScope(needManagement)},
}

// intercept runs around every RPC method: the call goes to the server
// that must answer it, then its caller is checked, then it runs.
func (s *Server) intercept(ctx context.Context, method string, args, reply any, call func(context.Context) error) error {
	m, ok := rpcMethods[method]
	if !ok {
		return structs.NewError(structs.CodeInternal, "rpc: %s has no row in the servers' method table", method)
	}
	if m.route == toLeader || m.route == toLeaderList {
		info, ok := args.(rpcInfo)
		if !ok {
			return structs.NewError(structs.CodeInternal, "rpc: %s: its request %T cannot be forwarded", method, args)
		}
		if done, err := s.forward(method, info, args, reply); done {
			return err
		}
	}
	if err := s.checkGuard(ctx, method, m.guard, args); err != nil {
		return err
	}
	return call(ctx)
}

// requestInfo is what a guard reads of a request: its token and its
// namespace.
type requestInfo interface {
	authInfo
	RequestNamespace() string
}

// checkGuard checks the caller of method against its guard.
func (s *Server) checkGuard(ctx context.Context, method string, g guard, args any) error {
	if g.kind == guardOpen || g.kind == guardHandler {
		return nil
	}
	req, ok := args.(requestInfo)
	if !ok {
		return structs.NewError(structs.CodeInternal, "rpc: %s: its request %T carries no token", method, args)
	}
	switch g.kind {
	case guardNamespace:
		return s.allowNamespace(req.GetAuthToken(), req.RequestNamespace(), g.capability)
	case guardScope:
		return s.allowScope(req.GetAuthToken(), g.scope...)
	case guardServers:
		return s.allowServerOnly(ctx, method, req.GetAuthToken())
	}
	return structs.NewError(structs.CodeInternal, "rpc: %s: unknown guard %d", method, g.kind)
}

// checkMethodTable fails unless every method served has a row and every
// row a method.
func checkMethodTable(served []string) error {
	seen := map[string]bool{}
	for _, m := range served {
		seen[m] = true
		if _, ok := rpcMethods[m]; !ok {
			return structs.NewError(structs.CodeInternal, "server: RPC method %s has no row in rpcMethods (rpc_table.go): say where it is answered and who may call it", m)
		}
	}
	for m := range rpcMethods {
		if !seen[m] {
			return structs.NewError(structs.CodeInternal, "server: rpcMethods (rpc_table.go) has a row for %s, which no endpoint serves", m)
		}
	}
	return nil
}
