package structs

import "time"

// DefaultNamespace is the namespace of objects that name none.
const DefaultNamespace = "default"

// QueryOptions ride on every read request. MinQueryIndex > 0 makes the read
// block until the answer's index passes it or MaxQueryTime ends.
type QueryOptions struct {
	Namespace     string
	MinQueryIndex uint64
	MaxQueryTime  time.Duration
	AllowStale    bool   // a follower may answer from its own state
	Prefix        string // list filter on the ID prefix
	Forwarded     bool   // set by the server that forwarded the request
	// AuthToken is the caller's ACL secret ID, or a client's node secret;
	// empty is anonymous.
	AuthToken string
}

// RequestNamespace returns the namespace, defaulting it.
func (q *QueryOptions) RequestNamespace() string {
	if q.Namespace == "" {
		return DefaultNamespace
	}
	return q.Namespace
}

// IsRead marks a request as a read for forwarding.
func (q *QueryOptions) IsRead() bool { return true }

// AllowStaleRead reports whether a follower may answer.
func (q *QueryOptions) AllowStaleRead() bool { return q.AllowStale }

// IsForwarded reports whether another server already forwarded this request.
func (q *QueryOptions) IsForwarded() bool { return q.Forwarded }

// SetForwarded marks the request as forwarded once.
func (q *QueryOptions) SetForwarded() { q.Forwarded = true }

// GetAuthToken returns the caller's token.
func (q *QueryOptions) GetAuthToken() string { return q.AuthToken }

// SetAuthToken sets the caller's token.
func (q *QueryOptions) SetAuthToken(t string) { q.AuthToken = t }

// QueryMeta rides on every read response.
type QueryMeta struct {
	Index       uint64        // the raft index the answer reflects
	LastContact time.Duration // how long since this server heard from the leader
	KnownLeader bool
}

// WriteRequest rides on every write request.
type WriteRequest struct {
	Namespace string
	Forwarded bool
	// AuthToken is the caller's ACL secret ID, or a client's node secret;
	// empty is anonymous.
	AuthToken string
}

// RequestNamespace returns the namespace, defaulting it.
func (w *WriteRequest) RequestNamespace() string {
	if w.Namespace == "" {
		return DefaultNamespace
	}
	return w.Namespace
}

// IsRead marks a request as a write for forwarding.
func (w *WriteRequest) IsRead() bool { return false }

// AllowStaleRead is false: writes go to the leader.
func (w *WriteRequest) AllowStaleRead() bool { return false }

// IsForwarded reports whether another server already forwarded this request.
func (w *WriteRequest) IsForwarded() bool { return w.Forwarded }

// SetForwarded marks the request as forwarded once.
func (w *WriteRequest) SetForwarded() { w.Forwarded = true }

// GetAuthToken returns the caller's token.
func (w *WriteRequest) GetAuthToken() string { return w.AuthToken }

// SetAuthToken sets the caller's token.
func (w *WriteRequest) SetAuthToken(t string) { w.AuthToken = t }

// WriteMeta rides on every write response.
type WriteMeta struct {
	Index uint64 // the raft index of the write
}

// GenericResponse answers writes that return nothing else.
type GenericResponse struct {
	WriteMeta
}
