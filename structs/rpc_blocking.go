package structs

// BlockingQuery reports whether the query waits for a change before it is
// answered: it carries the index the caller has seen (MinQueryIndex). The
// RPC server's metrics tell such long polls from other requests.
func (q *QueryOptions) BlockingQuery() bool { return q.MinQueryIndex > 0 }

// MinIndex is the index a blocking query waits to pass (0: none).
func (q *QueryOptions) MinIndex() uint64 { return q.MinQueryIndex }

// BlockingQuery reports whether Event.Next may wait for an event: it has a
// wait. (It shadows the embedded QueryOptions', whose MinQueryIndex
// Event.Next does not read.)
func (r *EventNextRequest) BlockingQuery() bool { return r.MaxWait > 0 }
