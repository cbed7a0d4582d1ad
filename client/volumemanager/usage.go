package volumemanager

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/berth-csi/berth/structs"
)

// usageFileVersion is the format of the usage file. Bump it (and keep
// reading the older ones) on an incompatible change.
const usageFileVersion = 1

// stageState is where a volume is in staging on this node. Persisted:
// the numbers are explicit and append-only.
type stageState uint8

const (
	stageNone      stageState = 0 // not staged, or the plugin does not stage
	stageStaging   stageState = 1 // NodeStageVolume was sent and may have happened
	stageStaged    stageState = 2
	stageUnstaging stageState = 3 // NodeUnstageVolume was sent and may have happened
)

func (s stageState) String() string {
	switch s {
	case stageNone:
		return "none"
	case stageStaging:
		return "staging"
	case stageStaged:
		return "staged"
	case stageUnstaging:
		return "unstaging"
	}
	return fmt.Sprintf("stageState(%d)", uint8(s))
}

// publishState is where a volume is in publishing for one allocation.
// Persisted: the numbers are explicit and append-only; 0 is invalid.
type publishState uint8

const (
	publishPublishing   publishState = 1 // NodePublishVolume is due or was sent and may have happened
	publishPublished    publishState = 2
	publishUnpublishing publishState = 3 // NodeUnpublishVolume was sent and may have happened
)

func (s publishState) String() string {
	switch s {
	case publishPublishing:
		return "publishing"
	case publishPublished:
		return "published"
	case publishUnpublishing:
		return "unpublishing"
	}
	return fmt.Sprintf("publishState(%d)", uint8(s))
}

// volumeKey is how a volume is known on this node: berth's volume ID
// under its plugin.
type volumeKey struct{ plugin, volume string }

// volumeUsage is one volume on this node: how it is staged and which
// allocations use it. Every allocation in Allocs counts as a user, in
// whatever state, so the volume is unstaged only when Allocs is empty.
type volumeUsage struct {
	PluginID         string                          `json:"plugin_id"`
	VolumeID         string                          `json:"volume_id"`
	ExternalVolumeID string                          `json:"external_volume_id"`
	AttachmentMode   structs.CSIVolumeAttachmentMode `json:"attachment_mode"`
	Stage            stageState                      `json:"stage"`
	// StagingPath and PluginStagingPath are set when the volume is (or
	// was being) staged: on the host and as the plugin was told.
	StagingPath       string                 `json:"staging_path,omitempty"`
	PluginStagingPath string                 `json:"plugin_staging_path,omitempty"`
	Allocs            map[string]*allocUsage `json:"allocs"`
}

// allocUsage is one allocation's use of a volume.
type allocUsage struct {
	State            publishState                `json:"state"`
	AccessMode       structs.CSIVolumeAccessMode `json:"access_mode"`
	ReadOnly         bool                        `json:"read_only"`
	TargetPath       string                      `json:"target_path"`        // on the host: what the task binds
	PluginTargetPath string                      `json:"plugin_target_path"` // as the plugin was told
	// TaskDevice is the client's own node of a block volume's device, for
	// its non-root tasks (taskDevice), "" when none was made.
	TaskDevice string `json:"task_device,omitempty"`
}

func (u *volumeUsage) key() volumeKey { return volumeKey{u.PluginID, u.VolumeID} }

func (u *volumeUsage) copy() *volumeUsage {
	c := *u
	c.Allocs = make(map[string]*allocUsage, len(u.Allocs))
	for id, a := range u.Allocs {
		ac := *a
		c.Allocs[id] = &ac
	}
	return &c
}

// usageFile is the persisted form: the volumes sorted by plugin and ID,
// so that the same usage always writes the same bytes.
type usageFile struct {
	Version int            `json:"version"`
	Volumes []*volumeUsage `json:"volumes"`
}

func marshalUsage(usage map[volumeKey]*volumeUsage) ([]byte, error) {
	f := usageFile{Version: usageFileVersion, Volumes: make([]*volumeUsage, 0, len(usage))}
	for _, k := range slices.SortedFunc(maps.Keys(usage), func(a, b volumeKey) int {
		if c := strings.Compare(a.plugin, b.plugin); c != 0 {
			return c
		}
		return strings.Compare(a.volume, b.volume)
	}) {
		f.Volumes = append(f.Volumes, usage[k])
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// loadUsage reads the usage file at path; a missing file is no usage. A
// file it cannot trust fails with ErrCorruptUsage: forgetting usage could
// leave volumes mounted with no record of them, and guessing could
// unstage one in use.
func loadUsage(path string) (map[volumeKey]*volumeUsage, error) {
	usage := map[volumeKey]*volumeUsage{}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return usage, nil
	}
	if err != nil {
		return nil, fmt.Errorf("volumemanager: read %s: %w", path, err)
	}
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s; move it aside only after unmounting what it lists by hand",
			ErrCorruptUsage, path, fmt.Sprintf(format, args...))
	}
	var f usageFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, corrupt("%v", err)
	}
	if f.Version != usageFileVersion {
		return nil, corrupt("format version %d, this client reads version %d", f.Version, usageFileVersion)
	}
	for i, u := range f.Volumes {
		if u == nil || u.PluginID == "" || u.VolumeID == "" || u.ExternalVolumeID == "" {
			return nil, corrupt("volume %d lacks its plugin, volume or external volume ID", i+1)
		}
		if _, dup := usage[u.key()]; dup {
			return nil, corrupt("volume %q of plugin %q is listed twice", u.VolumeID, u.PluginID)
		}
		if u.Stage > stageUnstaging {
			return nil, corrupt("volume %q: unknown stage state %d", u.VolumeID, u.Stage)
		}
		if u.Stage != stageNone && (u.StagingPath == "" || u.PluginStagingPath == "") {
			return nil, corrupt("volume %q is %s without a staging path", u.VolumeID, u.Stage)
		}
		if u.Allocs == nil {
			u.Allocs = map[string]*allocUsage{}
		}
		for id, a := range u.Allocs {
			if a == nil || a.State < publishPublishing || a.State > publishUnpublishing || a.TargetPath == "" || a.PluginTargetPath == "" {
				return nil, corrupt("volume %q: alloc %s has no valid state or target path", u.VolumeID, id)
			}
		}
		usage[u.key()] = u
	}
	return usage, nil
}

// Use is one allocation's use of a volume on this node, as recorded.
type Use struct {
	AllocID          string
	VolumeID         string
	PluginID         string
	ExternalVolumeID string
}

// Uses lists every recorded use, sorted by volume then alloc: what a
// client that comes back checks against the allocations it still runs.
func (m *Manager) Uses() []Use {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Use
	for _, u := range m.usage {
		for allocID := range u.Allocs {
			out = append(out, Use{AllocID: allocID, VolumeID: u.VolumeID, PluginID: u.PluginID, ExternalVolumeID: u.ExternalVolumeID})
		}
	}
	slices.SortFunc(out, func(a, b Use) int {
		return cmp.Or(strings.Compare(a.PluginID, b.PluginID), strings.Compare(a.VolumeID, b.VolumeID), strings.Compare(a.AllocID, b.AllocID))
	})
	return out
}
