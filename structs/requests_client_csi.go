package structs

// The ClientCSI requests are server-to-client calls: a server sends them
// over the session a client opened, to the client that runs a healthy
// instance of the plugin. NodeID routes the call; the client answers from
// its own plugin. QueryOptions carries the forwarding mark between servers.

// ClientCSIControllerCreateVolumeRequest asks a controller instance to
// create a volume. Name is the idempotency key: the same name returns the
// same volume.
type ClientCSIControllerCreateVolumeRequest struct {
	PluginID            string
	NodeID              string
	Name                string
	CapacityMin         int64
	CapacityMax         int64
	Capabilities        []*CSIVolumeCapability
	MountOptions        *CSIMountOptions
	Secrets             CSISecrets
	Parameters          map[string]string
	SnapshotID          string
	CloneID             string
	RequiredTopologies  []*CSITopology
	PreferredTopologies []*CSITopology
	QueryOptions
}

// ClientCSIControllerCreateVolumeResponse is what the plugin made.
type ClientCSIControllerCreateVolumeResponse struct {
	ExternalVolumeID string
	CapacityBytes    int64
	VolumeContext    map[string]string
	Topologies       []*CSITopology
}

// ClientCSIControllerDeleteVolumeRequest asks a controller instance to
// delete a volume; deleting one that is already gone succeeds.
type ClientCSIControllerDeleteVolumeRequest struct {
	PluginID         string
	NodeID           string
	ExternalVolumeID string
	Secrets          CSISecrets
	QueryOptions
}

// ClientCSIControllerDeleteVolumeResponse is empty: success is the answer.
type ClientCSIControllerDeleteVolumeResponse struct{}

// ClientCSIControllerValidateVolumeRequest asks a controller instance
// whether a registered volume supports the capabilities it is registered
// with. An unconfirmed answer is not a failure; a confirmed set that
// differs is, and the error names the field.
type ClientCSIControllerValidateVolumeRequest struct {
	PluginID         string
	NodeID           string
	ExternalVolumeID string
	Capabilities     []*CSIVolumeCapability
	MountOptions     *CSIMountOptions
	Secrets          CSISecrets
	Parameters       map[string]string
	Context          map[string]string
	QueryOptions
}

// ClientCSIControllerValidateVolumeResponse says whether the plugin
// confirmed the capabilities (false: it did not say either way).
type ClientCSIControllerValidateVolumeResponse struct {
	Confirmed bool
	Message   string // the plugin's explanation when it did not confirm
}

// ClientCSIControllerExpandVolumeRequest asks a controller instance to
// grow a volume to at least CapacityMin (and at most CapacityMax, if set).
type ClientCSIControllerExpandVolumeRequest struct {
	PluginID         string
	NodeID           string
	ExternalVolumeID string
	CapacityMin      int64
	CapacityMax      int64
	Capability       *CSIVolumeCapability // one the volume is registered with; nil if it has none
	MountOptions     *CSIMountOptions
	Secrets          CSISecrets
	QueryOptions
}

// ClientCSIControllerExpandVolumeResponse is the volume's new capacity and
// whether each node that has it staged must also expand it.
type ClientCSIControllerExpandVolumeResponse struct {
	CapacityBytes         int64
	NodeExpansionRequired bool
}

// ClientCSIControllerCreateSnapshotRequest asks a controller instance to
// snapshot a volume. Name is the idempotency key.
type ClientCSIControllerCreateSnapshotRequest struct {
	PluginID               string
	NodeID                 string
	ExternalSourceVolumeID string
	Name                   string
	Secrets                CSISecrets
	Parameters             map[string]string
	QueryOptions
}

// ClientCSIControllerCreateSnapshotResponse is the snapshot made (or found
// by name). Only the plugin's fields are set.
type ClientCSIControllerCreateSnapshotResponse struct {
	Snapshot *CSISnapshot
}

// ClientCSIControllerDeleteSnapshotRequest asks a controller instance to
// delete a snapshot; deleting one already gone succeeds.
type ClientCSIControllerDeleteSnapshotRequest struct {
	PluginID   string
	NodeID     string
	SnapshotID string
	Secrets    CSISecrets
	QueryOptions
}

// ClientCSIControllerDeleteSnapshotResponse is empty: success is the answer.
type ClientCSIControllerDeleteSnapshotResponse struct{}

// ClientCSIControllerListSnapshotsRequest asks a controller instance for
// one page of its snapshots. MaxEntries 0 lets the plugin choose.
type ClientCSIControllerListSnapshotsRequest struct {
	PluginID      string
	NodeID        string
	SnapshotID    string // only this snapshot (none if it does not exist)
	MaxEntries    int32
	StartingToken string
	Secrets       CSISecrets
	QueryOptions
}

// ClientCSIControllerListSnapshotsResponse is one page; NextToken is empty
// on the last. Only the plugin's fields of each snapshot are set.
type ClientCSIControllerListSnapshotsResponse struct {
	Snapshots []*CSISnapshot
	NextToken string
}

// ClientCSIControllerListVolumesRequest asks a controller instance for one
// page of its volumes. MaxEntries 0 lets the plugin choose.
type ClientCSIControllerListVolumesRequest struct {
	PluginID      string
	NodeID        string
	MaxEntries    int32
	StartingToken string
	QueryOptions
}

// ClientCSIControllerListVolumesResponse is one page; NextToken is empty on
// the last. VolumeID is not set: the client does not know berth's IDs.
type ClientCSIControllerListVolumesResponse struct {
	Volumes   []*CSIExternalVolume
	NextToken string
}

// ClientCSIControllerAttachVolumeRequest asks a controller instance to
// publish a volume to a node (ControllerPublishVolume). ExternalNodeID is
// the plugin's node ID of the claiming node (its NodeGetInfo answer).
type ClientCSIControllerAttachVolumeRequest struct {
	PluginID         string
	NodeID           string // the controller instance's node: where the call runs
	ExternalVolumeID string
	ExternalNodeID   string
	Capability       *CSIVolumeCapability
	MountOptions     *CSIMountOptions
	ReadOnly         bool
	Secrets          CSISecrets
	VolumeContext    map[string]string
	QueryOptions
}

// ClientCSIControllerAttachVolumeResponse carries the publish context the
// node calls need.
type ClientCSIControllerAttachVolumeResponse struct {
	PublishContext map[string]string
}

// ClientCSIControllerDetachVolumeRequest asks a controller instance to
// unpublish a volume from a node (ControllerUnpublishVolume); one not
// published is detached.
type ClientCSIControllerDetachVolumeRequest struct {
	PluginID         string
	NodeID           string
	ExternalVolumeID string
	ExternalNodeID   string
	Secrets          CSISecrets
	QueryOptions
}

// ClientCSIControllerDetachVolumeResponse is empty.
type ClientCSIControllerDetachVolumeResponse struct{}

// ClientCSINodeDetachVolumeRequest asks the claiming node to unpublish a
// volume for an allocation and, when no other allocation on the node uses
// it, unstage it. A volume the node no longer has is detached.
type ClientCSINodeDetachVolumeRequest struct {
	PluginID         string
	NodeID           string // the claiming node
	AllocID          string
	VolumeID         string
	ExternalVolumeID string
	AccessMode       CSIVolumeAccessMode
	AttachmentMode   CSIVolumeAttachmentMode
	QueryOptions
}

// ClientCSINodeDetachVolumeResponse is empty.
type ClientCSINodeDetachVolumeResponse struct{}

// ClientCSINodeExpandVolumeRequest asks a node where a volume is staged or
// published to expand it there (NodeExpandVolume), after the plugin's
// ControllerExpandVolume said the node must. The client finds the paths
// (as the plugin sees them) and the capability in its own record of the
// volume's use; CapacityMin and CapacityMax are the range the controller
// expand was given.
type ClientCSINodeExpandVolumeRequest struct {
	PluginID         string
	NodeID           string // the node where the volume is in use
	VolumeID         string
	ExternalVolumeID string
	CapacityMin      int64
	CapacityMax      int64
	MountOptions     *CSIMountOptions
	Secrets          CSISecrets
	QueryOptions
}

// ClientCSINodeExpandVolumeResponse says whether the volume is in use on
// the node (false: neither staged nor published there, nothing was done)
// and the capacity the plugin answered, 0 if it gave none (or has no node
// EXPAND_VOLUME capability, so that nothing was called).
type ClientCSINodeExpandVolumeResponse struct {
	InUse         bool
	CapacityBytes int64
}
