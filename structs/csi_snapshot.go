package structs

import "time"

// CSISnapshot is a snapshot of a volume, as a plugin's controller reports
// it. Snapshots live at the provider only: berth does not store them.
// SourceVolumeID is berth's volume ID when berth knows the source volume;
// ExternalSourceVolumeID is always the plugin's.
type CSISnapshot struct {
	ID                     string // the plugin's snapshot ID: give it as snapshot_id to create a volume from it
	PluginID               string
	Name                   string // the idempotency key the snapshot was created with; empty when listed
	SourceVolumeID         string
	ExternalSourceVolumeID string
	SizeBytes              int64     // 0: the plugin did not say
	CreateTime             time.Time // zero: the plugin did not say
	IsReady                bool
}

// CSIExternalVolume is a volume as a plugin's controller lists it
// (ListVolumes). VolumeID is berth's ID for it, empty when berth does not
// know the volume.
type CSIExternalVolume struct {
	ExternalID               string
	VolumeID                 string
	CapacityBytes            int64
	Context                  map[string]string
	Topologies               []*CSITopology
	PublishedExternalNodeIDs []string
	IsAbnormal               bool
	Status                   string // the plugin's condition message, if any
}
