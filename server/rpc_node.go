package server

import (
	"context"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/server/scheduler"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// Node serves client nodes: registration with their plugin fingerprint,
// status, and reads.
type Node struct{ srv *Server }

// Register stores a node and its fingerprint. The node's plugins are
// created, updated or removed in the same raft write.
func (n *Node) Register(ctx context.Context, args *structs.NodeRegisterRequest, reply *structs.NodeUpdateResponse) (err error) {
	node := args.Node
	if node == nil {
		return structs.NewError(structs.CodeBadRequest, "node register: the request carries no node")
	}
	if err := allowRegisterPeer(ctx, node.ID); err != nil {
		return err
	}
	defer n.srv.trackRegisteredConnAfter(ctx, node.ID, args.IsForwarded(), &err)
	if done, err := n.srv.forward("Node.Register", args, args, reply); done {
		return err
	}
	if node.ID == "" {
		return structs.NewError(structs.CodeBadRequest, "node register: missing node ID")
	}
	existing, err := n.srv.State().NodeByID(nil, node.ID)
	if err != nil {
		return err
	}
	if node.SecretHash, err = n.srv.allowNodeRegister(ctx, existing, node.ID, args.AuthToken); err != nil {
		return err
	}
	if node.Status == "" {
		node.Status = structs.NodeStatusInit
	}
	if !structs.ValidNodeStatus(node.Status) {
		return structs.NewError(structs.CodeBadRequest, "node %s: status %q is not one of initializing, ready, down", node.ID, node.Status)
	}
	if node.Name == "" {
		node.Name = node.ID
	}
	if err := validateFingerprint(node); err != nil {
		return err
	}
	now := time.Now()
	node.StatusUpdatedAt = now.UnixNano()
	for _, m := range []map[string]*structs.CSIInfo{node.CSIControllerPlugins, node.CSINodePlugins} {
		for _, info := range m {
			if info.UpdateTime.IsZero() {
				info.UpdateTime = now
			}
		}
	}
	_, index, err := raftApply[any](n.srv, structs.NodeRegisterRequestType, args)
	if err != nil {
		return err
	}
	ttl := n.srv.heartbeatTTL(node.ID)
	if node.Status != structs.NodeStatusDown {
		n.srv.resetHeartbeat(node.ID, ttl)
	}
	n.replyTTL(reply, ttl, index)
	return nil
}

// replyTTL fills what every node write answers: the TTL to heartbeat
// within (the one its timer was reset with, when it was), the leader,
// and the write's index.
func (n *Node) replyTTL(reply *structs.NodeUpdateResponse, ttl time.Duration, index uint64) {
	reply.HeartbeatTTL = ttl
	reply.LeaderRPCAddr = n.srv.leaderAddr()
	reply.Index = index
}

// validateFingerprint checks that every plugin entry is keyed by its own ID.
// A node entry without NodeGetInfo's answer is kept, unhealthy, by the
// state store (CSIInfo.NodeSideChecked).
func validateFingerprint(node *structs.Node) error {
	for id, info := range node.CSIControllerPlugins {
		if info == nil || info.PluginID != id {
			return structs.NewError(structs.CodeBadRequest, "node %s: controller plugin entry %q does not carry plugin ID %q", node.ID, id, id)
		}
	}
	for id, info := range node.CSINodePlugins {
		if info == nil || info.PluginID != id {
			return structs.NewError(structs.CodeBadRequest, "node %s: node plugin entry %q does not carry plugin ID %q", node.ID, id, id)
		}
	}
	return nil
}

// UpdateStatus sets a node's status; it is also the client's heartbeat.
// A heartbeat that changes nothing resets the node's TTL on the leader and
// writes nothing to raft.
func (n *Node) UpdateStatus(ctx context.Context, args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) (err error) {
	defer n.srv.trackNodeConnAfter(ctx, args.NodeID, args.AuthToken, args.IsForwarded(), &err)
	if done, err := n.srv.forward("Node.UpdateStatus", args, args, reply); done {
		return err
	}
	if args.NodeID == "" {
		return structs.NewError(structs.CodeBadRequest, "node status update: missing node ID")
	}
	if _, err := n.srv.allowNodeClient(n.srv.State(), args.NodeID, args.AuthToken); err != nil {
		return err
	}
	if !structs.ValidNodeStatus(args.Status) {
		return structs.NewError(structs.CodeBadRequest, "node %s: status %q is not one of initializing, ready, down", args.NodeID, args.Status)
	}
	node, err := n.srv.State().NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return structs.NewError(structs.CodeNotFound, "node %s is not registered; the client must register first", args.NodeID)
	}
	ttl := n.srv.heartbeatTTL(args.NodeID)
	if args.Status != structs.NodeStatusDown {
		n.srv.resetHeartbeat(args.NodeID, ttl)
	}
	if node.Status == args.Status && args.Event == nil {
		n.replyTTL(reply, ttl, node.ModifyIndex)
		return nil
	}
	now := time.Now()
	args.UpdatedAt = now.UnixNano()
	if args.Event != nil && args.Event.Timestamp.IsZero() {
		args.Event.Timestamp = now
	}
	_, index, err := raftApply[any](n.srv, structs.NodeUpdateStatusRequestType, args)
	if err != nil {
		return err
	}
	n.replyTTL(reply, ttl, index)
	return nil
}

// UpdateFingerprint applies what changed in a node's plugin fingerprint.
func (n *Node) UpdateFingerprint(ctx context.Context, args *structs.NodeFingerprintRequest, reply *structs.NodeUpdateResponse) (err error) {
	defer n.srv.trackNodeConnAfter(ctx, args.NodeID, args.AuthToken, args.IsForwarded(), &err)
	if done, err := n.srv.forward("Node.UpdateFingerprint", args, args, reply); done {
		return err
	}
	if args.NodeID == "" {
		return structs.NewError(structs.CodeBadRequest, "node fingerprint update: missing node ID")
	}
	if _, err := n.srv.allowNodeClient(n.srv.State(), args.NodeID, args.AuthToken); err != nil {
		return err
	}
	now := time.Now()
	for _, u := range args.Plugins {
		if u == nil {
			continue // the state store refuses it, naming the entry
		}
		for _, info := range []*structs.CSIInfo{u.Controller, u.Node} {
			if info != nil && info.UpdateTime.IsZero() {
				info.UpdateTime = now
			}
		}
	}
	for _, e := range args.Events {
		if e != nil && e.Timestamp.IsZero() {
			e.Timestamp = now
		}
	}
	for _, r := range args.VolumeUsage {
		if r != nil && r.Usage != nil && r.Usage.CollectedAt.IsZero() {
			r.Usage.CollectedAt = now
		}
	}
	// Concurrent deltas, from every client, share raft entries (batcher),
	// each applied all or nothing on its own; the entry carries no token.
	index, err := n.srv.fingerprints.apply(structs.NodeFingerprintRequest{NodeID: args.NodeID, Plugins: args.Plugins,
		Events: args.Events, VolumeUsage: args.VolumeUsage})
	if err != nil {
		return err
	}
	// Not a heartbeat: the client's heartbeats, not this answer, set its
	// fence and its timer here.
	n.replyTTL(reply, n.srv.heartbeatTTL(args.NodeID), index)
	return nil
}

// Deregister removes nodes and their plugin instances.
func (n *Node) Deregister(args *structs.NodeDeregisterRequest, reply *structs.NodeUpdateResponse) error {
	if len(args.NodeIDs) == 0 {
		return structs.NewError(structs.CodeBadRequest, "node deregister: no node IDs given")
	}
	for _, id := range args.NodeIDs {
		if err := n.srv.allowNodeOperator(n.srv.State(), id, args.AuthToken); err != nil {
			return err
		}
	}
	_, index, err := raftApply[any](n.srv, structs.NodeDeregisterRequestType, args)
	if err != nil {
		return err
	}
	for _, id := range args.NodeIDs {
		n.srv.clearHeartbeat(id)
	}
	reply.Index = index
	return nil
}

// List lists nodes in ID order, by ID prefix if one is given, a page at a
// time when asked (PerPage, NextToken).
func (n *Node) List(args *structs.NodeListRequest, reply *structs.NodeListResponse) error {
	if args.PerPage < 0 {
		return structs.NewError(structs.CodeBadRequest, "node list: per_page must not be negative (got %d)", args.PerPage)
	}
	return n.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		iter, err := st.NodesFrom(ws, args.Prefix, args.NextToken)
		if err != nil {
			return err
		}
		reply.Nodes, reply.NextToken = []*structs.NodeListStub{}, ""
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			node := raw.(*structs.Node)
			if args.PerPage > 0 && len(reply.Nodes) == args.PerPage {
				reply.NextToken = node.ID
				break
			}
			reply.Nodes = append(reply.Nodes, node.Stub())
		}
		reply.Index, err = maxIndex(st, state.TableNodes)
		return err
	})
}

// Get reads one node; Node is nil when it does not exist.
func (n *Node) Get(args *structs.NodeSpecificRequest, reply *structs.SingleNodeResponse) error {
	if args.NodeID == "" {
		return structs.NewError(structs.CodeBadRequest, "node get: missing node ID")
	}
	return n.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		node, err := st.NodeByID(ws, args.NodeID)
		if err != nil {
			return err
		}
		// Without its secret's hash, which never leaves the servers; the
		// reply is only encoded, never changed.
		reply.Node = node.Sanitized()
		if node != nil {
			reply.Index = node.ModifyIndex
			// A snapshot of this read: an allocation's change alone does
			// not wake a blocking read of the node.
			reply.Node.Allocated, err = allocatedOn(st, node)
			return err
		}
		reply.Index, err = maxIndex(st, state.TableNodes)
		return err
	})
}

// allocatedOn is what the node's allocations take of what it offers (nil
// for a node that reports no resources).
func allocatedOn(st *state.StateStore, node *structs.Node) (*structs.AllocatedResources, error) {
	capacity := node.Capacity()
	if capacity == nil {
		return nil, nil
	}
	used, count, err := scheduler.Allocated(st, node, nil)
	if err != nil {
		return nil, err
	}
	return &structs.AllocatedResources{Capacity: *capacity, Allocated: used, Allocs: count}, nil
}
