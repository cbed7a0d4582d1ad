package api

import (
	"net/url"
	"strconv"
	"time"
)

// Response headers of the HTTP API.
const (
	HeaderIndex       = "X-Berth-Index"       // the raft index the answer reflects
	HeaderKnownLeader = "X-Berth-KnownLeader" // "true" when the answering server knows a leader
	HeaderLastContact = "X-Berth-LastContact" // milliseconds since the server heard from the leader
	HeaderNextToken   = "X-Berth-NextToken"   // a paged read: where the next page starts; absent on the last
)

// QueryOptions shape a read. WaitIndex > 0 makes it a blocking query: the
// server answers once its index passes WaitIndex or WaitTime ends.
type QueryOptions struct {
	WaitIndex  uint64
	WaitTime   time.Duration
	Prefix     string // only objects whose ID starts with it
	PluginID   string // volumes of this plugin only
	NodeID     string // volumes claimed on this node only
	Namespace  string
	AllowStale bool // any server may answer from its own state
	// PerPage and NextToken page a read that pages (nodes, a plugin's
	// instances): at most PerPage objects (0: all), from NextToken (the
	// previous answer's QueryMeta.NextToken).
	PerPage   int
	NextToken string
}

func (q *QueryOptions) encode(v url.Values) {
	if q == nil {
		return
	}
	if q.WaitIndex > 0 {
		v.Set("index", strconv.FormatUint(q.WaitIndex, 10))
	}
	if q.WaitTime > 0 {
		v.Set("wait", q.WaitTime.String())
	}
	if q.Prefix != "" {
		v.Set("prefix", q.Prefix)
	}
	if q.PluginID != "" {
		v.Set("plugin_id", q.PluginID)
	}
	if q.NodeID != "" {
		v.Set("node_id", q.NodeID)
	}
	if q.Namespace != "" {
		v.Set("namespace", q.Namespace)
	}
	if q.AllowStale {
		v.Set("stale", "")
	}
	if q.PerPage > 0 {
		v.Set("per_page", strconv.Itoa(q.PerPage))
	}
	if q.NextToken != "" {
		v.Set("next_token", q.NextToken)
	}
}

// QueryMeta describes a read's answer.
type QueryMeta struct {
	LastIndex   uint64 // pass as the next WaitIndex to block for a change
	KnownLeader bool
	LastContact time.Duration
	NextToken   string // a paged read: pass as the next QueryOptions.NextToken; empty on the last page
}

// WriteMeta describes a write's answer.
type WriteMeta struct {
	LastIndex uint64 // the raft index of the write
}
