package structs

import "time"

// CSIVolumeRegisterRequest registers new volumes or updates the mutable
// fields of known ones, all in one raft entry.
type CSIVolumeRegisterRequest struct {
	Volumes []*CSIVolume
	WriteRequest
}

// CSIVolumeRegisterBatchRequest is register requests that the leader
// coalesced into one raft entry; the FSM applies each on its own, all or
// nothing, and answers one error per request.
type CSIVolumeRegisterBatchRequest struct {
	Registers []CSIVolumeRegisterRequest
}

// CSIVolumeRegisterResponse answers CSIVolumeRegisterRequest. Warnings
// are what the plugin said of volumes it did not refuse, such as why it
// did not confirm their capabilities.
type CSIVolumeRegisterResponse struct {
	Warnings []string `json:",omitempty"`
	WriteMeta
}

// CSIVolumeDeregisterRequest removes volumes. Force allows it while claims
// remain, but only when every claiming allocation is terminal.
type CSIVolumeDeregisterRequest struct {
	VolumeIDs []string
	Force     bool
	WriteRequest
}

// CSIVolumeDeregisterResponse answers CSIVolumeDeregisterRequest.
type CSIVolumeDeregisterResponse struct {
	WriteMeta
}

// CSIVolumeClaimRequest takes a claim (State taken, Mode read or write) or
// moves an existing one along its release (any later State). Timestamp is
// stamped by the RPC handler.
type CSIVolumeClaimRequest struct {
	VolumeID       string
	AllocationID   string
	NodeID         string
	ExternalNodeID string
	Mode           CSIVolumeClaimMode
	AccessMode     CSIVolumeAccessMode
	AttachmentMode CSIVolumeAttachmentMode
	State          CSIVolumeClaimState
	LastError      string
	NextAttemptAt  time.Time
	Timestamp      time.Time
	WriteRequest
}

// ToClaim builds the claim the request describes.
func (r *CSIVolumeClaimRequest) ToClaim() *CSIVolumeClaim {
	return &CSIVolumeClaim{
		AllocID:        r.AllocationID,
		NodeID:         r.NodeID,
		ExternalNodeID: r.ExternalNodeID,
		Mode:           r.Mode,
		AccessMode:     r.AccessMode,
		AttachmentMode: r.AttachmentMode,
		State:          r.State,
		LastError:      r.LastError,
		NextAttemptAt:  r.NextAttemptAt,
		UpdatedAt:      r.Timestamp,
	}
}

// CSIVolumeClaimBatchRequest is the raft entry for claims: many claims in
// one entry and one state transaction. Each claim succeeds or fails on its
// own; the FSM returns a []error aligned with Claims.
type CSIVolumeClaimBatchRequest struct {
	Claims []CSIVolumeClaimRequest
}

// CSIVolumePublishRequest is a client confirming the claim the servers
// reserved for its allocation when they placed it, and asking for the
// volume to be published to its node (ControllerPublishVolume, when the
// plugin publishes). It takes no claim: an allocation holds only the
// claims its placement reserved.
type CSIVolumePublishRequest struct {
	VolumeID     string
	AllocationID string
	NodeID       string
	WriteRequest
}

// CSIVolumeClaimResponse answers a claim, and a publish.
type CSIVolumeClaimResponse struct {
	Volume *CSIVolume // the volume after the claim, sanitized
	// Claim is the allocation's claim as the servers hold it (a publish
	// answers it): its mode decides whether the node mounts read-only,
	// and its access and attachment modes are the ones the node calls use.
	Claim *CSIVolumeClaim `json:",omitempty"`
	// PublishContext is the controller's answer to ControllerPublish for a
	// taken claim, when the plugin publishes; the node calls need it.
	PublishContext map[string]string
	// NodeSecrets are the volume's secrets, for the claiming client's
	// NodeStageVolume and NodePublishVolume calls, on a taken claim. The
	// HTTP API never returns them.
	NodeSecrets CSISecrets
	WriteMeta
}

// CSIVolumeListRequest lists volumes, optionally of one plugin or with
// claims on one node.
type CSIVolumeListRequest struct {
	PluginID string
	NodeID   string
	QueryOptions
}

// CSIVolumeListResponse answers CSIVolumeListRequest.
type CSIVolumeListResponse struct {
	Volumes []*CSIVolumeListStub
	QueryMeta
}

// CSIVolumeGetRequest reads one volume.
type CSIVolumeGetRequest struct {
	ID string
	QueryOptions
}

// CSIVolumeGetResponse answers CSIVolumeGetRequest; Volume is nil when the
// volume does not exist.
type CSIVolumeGetResponse struct {
	Volume *CSIVolume
	QueryMeta
}

// CSIPluginListRequest lists plugins.
type CSIPluginListRequest struct {
	QueryOptions
}

// CSIPluginListResponse answers CSIPluginListRequest.
type CSIPluginListResponse struct {
	Plugins []*CSIPluginListStub
	QueryMeta
}

// CSIPluginGetRequest reads one plugin with a page of its instances: the
// nodes that run it, in node ID order, from NextToken (a node ID; empty is
// the first), at most PerPage nodes (0 is every node).
type CSIPluginGetRequest struct {
	ID        string
	PerPage   int
	NextToken string
	QueryOptions
}

// CSIPluginGetResponse answers CSIPluginGetRequest; Plugin is nil when the
// plugin does not exist. NextToken is where the next page starts, empty
// on the last.
type CSIPluginGetResponse struct {
	Plugin    *CSIPlugin
	NextToken string
	QueryMeta
}

// CSIPluginDeleteRequest deletes a plugin no instance, job or volume uses.
type CSIPluginDeleteRequest struct {
	ID string
	WriteRequest
}

// CSIPluginDeleteResponse answers CSIPluginDeleteRequest.
type CSIPluginDeleteResponse struct {
	WriteMeta
}

// CSIVolumeCreateRequest creates volumes through a controller instance of
// their plugin and registers what the plugin made.
type CSIVolumeCreateRequest struct {
	Volumes []*CSIVolume
	WriteRequest
}

// CSIVolumeCreateResponse carries the volumes as registered.
type CSIVolumeCreateResponse struct {
	Volumes []*CSIVolume
	WriteMeta
}

// CSIVolumeDeleteRequest deletes volumes at the provider, then
// deregisters them. Secrets, when given, replace the volume's own for the
// delete call.
type CSIVolumeDeleteRequest struct {
	VolumeIDs []string
	Secrets   CSISecrets
	WriteRequest
}

// CSIVolumeDeleteResponse answers CSIVolumeDeleteRequest.
type CSIVolumeDeleteResponse struct {
	WriteMeta
}

// CSISnapshotCreateRequest snapshots a registered volume through a
// controller instance of its plugin. Name is the idempotency key (the
// volume's ID and the time when empty); Secrets, when given, replace the
// volume's own for this call.
type CSISnapshotCreateRequest struct {
	VolumeID   string
	Name       string
	Secrets    CSISecrets
	Parameters map[string]string
	WriteRequest
}

// CSISnapshotCreateResponse carries the snapshot made.
type CSISnapshotCreateResponse struct {
	Snapshot *CSISnapshot
	WriteMeta
}

// CSISnapshotDeleteRequest deletes a snapshot at the provider.
type CSISnapshotDeleteRequest struct {
	PluginID   string
	SnapshotID string
	Secrets    CSISecrets
	WriteRequest
}

// CSISnapshotDeleteResponse answers CSISnapshotDeleteRequest.
type CSISnapshotDeleteResponse struct {
	WriteMeta
}

// CSISnapshotListRequest reads one page of snapshots: of one plugin, or of
// every plugin that can list them when PluginID is empty. PerPage 0 lets
// the plugins choose; NextToken is the previous page's.
type CSISnapshotListRequest struct {
	PluginID  string
	PerPage   int32
	NextToken string
	Secrets   CSISecrets
	QueryOptions
}

// CSISnapshotListResponse is one page; NextToken is empty on the last.
type CSISnapshotListResponse struct {
	Snapshots []*CSISnapshot
	NextToken string
	QueryMeta
}

// CSIVolumeExternalListRequest reads one page of the volumes a plugin's
// controller lists (ListVolumes).
type CSIVolumeExternalListRequest struct {
	PluginID  string
	PerPage   int32
	NextToken string
	QueryOptions
}

// CSIVolumeExternalListResponse is one page; NextToken is empty on the
// last. Volumes berth does not know have an empty VolumeID.
type CSIVolumeExternalListResponse struct {
	Volumes   []*CSIExternalVolume
	NextToken string
	QueryMeta
}

// CSIVolumeDetachRequest asks the servers to release every claim a node
// holds on a volume, driving each through node and controller detach
// (`berth volume detach VOLUME NODE`). The node may be given by ID prefix
// at the CLI; here it is a whole ID.
type CSIVolumeDetachRequest struct {
	VolumeID string
	NodeID   string
	WriteRequest
}

// CSIVolumeDetachResponse answers CSIVolumeDetachRequest: the claims it
// started to release.
type CSIVolumeDetachResponse struct {
	Released []string // allocation IDs
	WriteMeta
}
