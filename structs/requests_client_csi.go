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
}
