package structs

// CSIVolumeNodeExpansion is a node expansion a volume waits for: its
// plugin's ControllerExpandVolume answered node_expansion_required, and
// NodeExpandVolume has not succeeded on a node since. The servers record
// it in the volume when no node had the volume staged or published at
// the expand (the next publish does it, on its node, before the tasks
// start), or when a node's expansion failed (the next publish, or the
// create or register run again, retries it).
type CSIVolumeNodeExpansion struct {
	// CapacityMin and CapacityMax are the range ControllerExpandVolume
	// was given; NodeExpandVolume gets the same. Their JSON names are the
	// CSI spec's, apart from the volume's own capacity_min and
	// capacity_max (which a caller sets, and this marker it may not).
	CapacityMin int64 `json:"RequiredBytes"`
	CapacityMax int64 `json:"LimitBytes"`
	// Capacity is what ControllerExpandVolume answered.
	Capacity int64 `json:"ControllerCapacity"`
	// LastError is the last failed NodeExpandVolume, naming its node;
	// empty when no node has tried yet.
	LastError string `json:",omitempty"`
}

// Copy returns a copy; nil stays nil.
func (e *CSIVolumeNodeExpansion) Copy() *CSIVolumeNodeExpansion {
	if e == nil {
		return nil
	}
	c := *e
	return &c
}

// CSIVolumeNodeExpandRequest asks the servers to finish a volume's
// pending node expansion on the node of an allocation that has just
// published it: the servers call NodeExpandVolume there
// (ClientCSI.NodeExpandVolume) and record the new capacity. A client
// sends it, for its own allocation, when the volume its publish returned
// carries a NodeExpansion.
type CSIVolumeNodeExpandRequest struct {
	VolumeID     string
	AllocationID string
	NodeID       string
	WriteRequest
}

// CSIVolumeNodeExpandResponse says whether the node expanded the volume
// (false: nothing was pending, or the volume is not staged or published
// on the node) and the volume's capacity as the servers record it.
type CSIVolumeNodeExpandResponse struct {
	Expanded bool
	Capacity int64
	WriteMeta
}
