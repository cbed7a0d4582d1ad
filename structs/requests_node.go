package structs

import "time"

// NodeRegisterRequest registers or updates a node with its fingerprint.
type NodeRegisterRequest struct {
	Node *Node
	WriteRequest
}

// NodeUpdateResponse answers node writes.
type NodeUpdateResponse struct {
	HeartbeatTTL  time.Duration // the client must heartbeat within this
	LeaderRPCAddr string
	WriteMeta
}

// NodeUpdateStatusRequest sets a node's status. UpdatedAt is stamped by the
// RPC handler; Event, if set, is appended to the node's events.
type NodeUpdateStatusRequest struct {
	NodeID    string
	Status    string
	UpdatedAt int64
	Event     *NodeEvent
	WriteRequest
}

// NodeDeregisterRequest removes nodes and their plugin instances.
type NodeDeregisterRequest struct {
	NodeIDs []string
	WriteRequest
}

// NodeSpecificRequest reads one node.
type NodeSpecificRequest struct {
	NodeID string
	QueryOptions
}

// SingleNodeResponse answers NodeSpecificRequest.
type SingleNodeResponse struct {
	Node *Node
	QueryMeta
}

// NodeListRequest lists nodes.
type NodeListRequest struct {
	// PerPage and NextToken page the list by node ID: at most PerPage
	// nodes (0: all), from the node ID NextToken (empty: the first).
	PerPage   int
	NextToken string
	QueryOptions
}

// NodeListResponse answers NodeListRequest. NextToken is the first node
// ID of the next page, empty on the last.
type NodeListResponse struct {
	Nodes     []*NodeListStub
	NextToken string
	QueryMeta
}

// NodePluginUpdate is a client's change to one plugin on its node: the
// full current info of each side; a nil side is gone from the node.
type NodePluginUpdate struct {
	PluginID   string
	Controller *CSIInfo
	Node       *CSIInfo
}

// NodeFingerprintRequest carries only what changed in a node's plugin
// fingerprint since the client's last acknowledged update, and the events
// the changes produced. The servers apply it to exactly those plugins.
type NodeFingerprintRequest struct {
	NodeID  string
	Plugins []*NodePluginUpdate
	Events  []*NodeEvent
	// VolumeUsage is the volume usage that changed since the client's
	// last acknowledged report, at most MaxUsageReports entries.
	VolumeUsage []*CSIVolumeUsageReport `json:",omitempty"`
	WriteRequest
}

// NodeFingerprintBatchRequest is fingerprint deltas that the leader
// coalesced into one raft entry; the FSM applies each on its own, all or
// nothing, and answers one error per delta ([]error). Its deltas carry no
// AuthToken.
type NodeFingerprintBatchRequest struct {
	Fingerprints []NodeFingerprintRequest
}

// ClientPingResponse is a client's answer to a server's ping over the
// session the client opened.
type ClientPingResponse struct {
	NodeID string
	Time   time.Time
}
