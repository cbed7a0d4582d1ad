package structs

import "time"

// CSIVolumeRegisterRequest registers new volumes or updates the mutable
// fields of known ones, all in one raft entry.
type CSIVolumeRegisterRequest struct {
	Volumes []*CSIVolume
	WriteRequest
}

// CSIVolumeRegisterResponse answers CSIVolumeRegisterRequest.
type CSIVolumeRegisterResponse struct {
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

// CSIVolumeClaimResponse answers a claim.
type CSIVolumeClaimResponse struct {
	Volume *CSIVolume // the volume after the claim, sanitized
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

// CSIPluginGetRequest reads one plugin.
type CSIPluginGetRequest struct {
	ID string
	QueryOptions
}

// CSIPluginGetResponse answers CSIPluginGetRequest; Plugin is nil when the
// plugin does not exist.
type CSIPluginGetResponse struct {
	Plugin *CSIPlugin
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
