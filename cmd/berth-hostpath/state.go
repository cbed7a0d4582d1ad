package main

import (
	"errors"
	"maps"
	"slices"
	"sort"
	"time"
)

// stateVersion is the layout of the state file. Append-only: a new layout
// gets a new number and a migration in loadState.
const stateVersion = 1

// state is everything the plugin must remember across restarts. A state
// handed out by the store is immutable; writers change a copy.
type state struct {
	Version   int                       `json:"version"`
	Volumes   map[string]*volume        `json:"volumes"`   // by volume ID
	Snapshots map[string]*snapshot      `json:"snapshots"` // by snapshot ID
	Stages    map[string]*stageRecord   `json:"stages"`    // by staging_target_path
	Publishes map[string]*publishRecord `json:"publishes"` // by target_path
}

// volume is a directory under <root>/volumes.
type volume struct {
	ID               string                `json:"id"`
	Name             string                `json:"name"` // CreateVolume name, the idempotency key
	CapacityBytes    int64                 `json:"capacity_bytes"`
	Parameters       map[string]string     `json:"parameters,omitempty"`
	SourceSnapshotID string                `json:"source_snapshot_id,omitempty"`
	SourceVolumeID   string                `json:"source_volume_id,omitempty"`
	Topology         map[string]string     `json:"topology,omitempty"`
	CreatedAt        time.Time             `json:"created_at"`
	Attachments      map[string]attachment `json:"attachments,omitempty"` // ControllerPublish, by node ID
	Block            bool                  `json:"block,omitempty"`       // an image (block.go), not a directory
}

// attachment records one ControllerPublishVolume.
type attachment struct {
	Readonly   bool   `json:"readonly"`
	AccessMode string `json:"access_mode"`
}

// snapshot is a copy of a volume directory under <root>/snapshots.
type snapshot struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	SourceVolumeID string    `json:"source_volume_id"`
	SizeBytes      int64     `json:"size_bytes"`
	CreatedAt      time.Time `json:"created_at"`
	Block          bool      `json:"block,omitempty"` // of a block volume
}

// usage is what NodeStage and NodePublish compare to decide whether a
// repeated call has "the same arguments".
type usage struct {
	AccessMode string   `json:"access_mode"`
	FsType     string   `json:"fs_type,omitempty"`
	MountFlags []string `json:"mount_flags,omitempty"`
	Readonly   bool     `json:"readonly"`
	Block      bool     `json:"block,omitempty"`
}

func (u usage) equal(o usage) bool {
	return u.AccessMode == o.AccessMode && u.FsType == o.FsType && u.Block == o.Block &&
		u.Readonly == o.Readonly && slices.Equal(u.MountFlags, o.MountFlags)
}

// stageRecord is a NodeStageVolume: the volume directory bind-mounted at Path.
type stageRecord struct {
	VolumeID string `json:"volume_id"`
	Path     string `json:"path"`
	Usage    usage  `json:"usage"`
	// Loop is the loop device a block volume's stage attached (nothing is
	// mounted at Path then).
	Loop string `json:"loop,omitempty"`
}

// publishRecord is a NodePublishVolume: a bind mount at TargetPath, from
// StagingPath when the volume was staged.
type publishRecord struct {
	VolumeID      string `json:"volume_id"`
	TargetPath    string `json:"target_path"`
	StagingPath   string `json:"staging_path,omitempty"`
	Usage         usage  `json:"usage"`
	CreatedTarget bool   `json:"created_target"` // the plugin made TargetPath and removes it
	// Loop is the loop device a block volume's publish made TargetPath a
	// node of; the last record naming it detaches it.
	Loop string `json:"loop,omitempty"`
}

func newState() *state {
	return &state{
		Version:   stateVersion,
		Volumes:   map[string]*volume{},
		Snapshots: map[string]*snapshot{},
		Stages:    map[string]*stageRecord{},
		Publishes: map[string]*publishRecord{},
	}
}

// copy is a deep copy, for a writer to change.
func (s *state) copy() *state {
	c := newState()
	for id, v := range s.Volumes {
		c.Volumes[id] = v.copy()
	}
	for id, sn := range s.Snapshots {
		c.Snapshots[id] = sn.copy()
	}
	for p, r := range s.Stages {
		rc := *r
		rc.Usage.MountFlags = slices.Clone(r.Usage.MountFlags)
		c.Stages[p] = &rc
	}
	for p, r := range s.Publishes {
		rc := *r
		rc.Usage.MountFlags = slices.Clone(r.Usage.MountFlags)
		c.Publishes[p] = &rc
	}
	return c
}

func (v *volume) copy() *volume {
	c := *v
	c.Parameters = maps.Clone(v.Parameters)
	c.Topology = maps.Clone(v.Topology)
	c.Attachments = maps.Clone(v.Attachments)
	return &c
}

func (s *snapshot) copy() *snapshot {
	c := *s
	return &c
}

// validate checks what loadState cannot leave to the JSON decoder.
func (s *state) validate() error {
	if s.Version != stateVersion {
		return errors.New("unknown state version")
	}
	for id, v := range s.Volumes {
		if v == nil || v.ID != id || v.Name == "" {
			return errors.New("volume entry " + id + " is malformed")
		}
	}
	for id, sn := range s.Snapshots {
		if sn == nil || sn.ID != id || sn.Name == "" {
			return errors.New("snapshot entry " + id + " is malformed")
		}
	}
	for p, r := range s.Stages {
		if r == nil || r.Path != p || r.VolumeID == "" {
			return errors.New("stage entry " + p + " is malformed")
		}
	}
	for p, r := range s.Publishes {
		if r == nil || r.TargetPath != p || r.VolumeID == "" {
			return errors.New("publish entry " + p + " is malformed")
		}
	}
	return nil
}

func (s *state) volumeByName(name string) *volume {
	for _, v := range s.Volumes {
		if v.Name == name {
			return v
		}
	}
	return nil
}

func (s *state) snapshotByName(name string) *snapshot {
	for _, sn := range s.Snapshots {
		if sn.Name == name {
			return sn
		}
	}
	return nil
}

// stagesOf returns the staging paths of a volume, sorted.
func (s *state) stagesOf(volID string) []string {
	var out []string
	for p, r := range s.Stages {
		if r.VolumeID == volID {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// publishesOf returns the publish records of a volume, sorted by target.
func (s *state) publishesOf(volID string) []*publishRecord {
	var out []*publishRecord
	for _, r := range s.Publishes {
		if r.VolumeID == volID {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TargetPath < out[j].TargetPath })
	return out
}

// attachedCount is how many volumes are controller-published to node.
func (s *state) attachedCount(node string) int64 {
	var n int64
	for _, v := range s.Volumes {
		if _, ok := v.Attachments[node]; ok {
			n++
		}
	}
	return n
}

// sortedVolumeIDs and sortedSnapshotIDs give the order that list tokens
// refer to.
func (s *state) sortedVolumeIDs() []string {
	return slices.Sorted(maps.Keys(s.Volumes))
}

func (s *state) sortedSnapshotIDs() []string {
	return slices.Sorted(maps.Keys(s.Snapshots))
}
