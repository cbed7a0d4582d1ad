package structs

// GCCutoffs say, per kind of row, how old a row must be for garbage
// collection, as a raft index: a row whose ModifyIndex is at or below the
// kind's cutoff has not changed for the kind's threshold. The leader maps
// its thresholds to indexes (it remembers when it saw each index), so the
// FSM, which must not read a clock, applies the same cutoffs on every
// server. 0 collects nothing of the kind by age; a manual collection
// (System.GarbageCollect) sends the largest index: any age.
type GCCutoffs struct {
	Alloc uint64
	Job   uint64
	Node  uint64
}

// GCJobKey names a job in a garbage collection request.
type GCJobKey struct {
	Namespace string
	ID        string
}

// GCClaimKey names a past claim: an allocation's claim on a volume.
type GCClaimKey struct {
	Namespace string
	VolumeID  string
	AllocID   string
}

// GCRequest is one garbage collection batch (GCRequestType): the rows
// the leader found collectable. The FSM deletes only those of them that
// still are, checked against the store as it is at the apply (a claim
// taken since keeps its allocation; a row written since is younger than
// the cutoff), so a stale decision deletes nothing it should not.
type GCRequest struct {
	Cutoffs GCCutoffs
	Allocs  []string
	Jobs    []GCJobKey
	Nodes   []string
	Claims  []GCClaimKey
}

// Rows is how many rows the request names.
func (r *GCRequest) Rows() int {
	return len(r.Allocs) + len(r.Jobs) + len(r.Nodes) + len(r.Claims)
}

// GCResult counts what a garbage collection removed.
type GCResult struct {
	Allocs     int
	Jobs       int
	Nodes      int
	PastClaims int
}

// Add adds o's counts to r's.
func (r *GCResult) Add(o *GCResult) {
	if o == nil {
		return
	}
	r.Allocs += o.Allocs
	r.Jobs += o.Jobs
	r.Nodes += o.Nodes
	r.PastClaims += o.PastClaims
}

// Total is the number of rows removed.
func (r GCResult) Total() int { return r.Allocs + r.Jobs + r.Nodes + r.PastClaims }

// SystemGCRequest asks the leader for a garbage collection now, with
// every threshold at zero (System.GarbageCollect).
type SystemGCRequest struct {
	WriteRequest
}

// SystemGCResponse answers SystemGCRequest with what was removed.
type SystemGCResponse struct {
	Removed GCResult
	WriteMeta
}
