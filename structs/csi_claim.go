package structs

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// CSIVolumeClaimMode is what a claim asks of a volume.
type CSIVolumeClaimMode string

const (
	CSIVolumeClaimRead  CSIVolumeClaimMode = "read"
	CSIVolumeClaimWrite CSIVolumeClaimMode = "write"
)

// Valid reports whether m is read or write.
func (m CSIVolumeClaimMode) Valid() bool {
	return m == CSIVolumeClaimRead || m == CSIVolumeClaimWrite
}

// CSIVolumeClaimState is where a claim is in its life. The numbers are
// persisted in raft and snapshots: append only, never renumber.
//
//	taken -> unpublishing -> node-detached -> controller-detached -> freed
type CSIVolumeClaimState int

const (
	CSIVolumeClaimStateTaken              CSIVolumeClaimState = 0
	CSIVolumeClaimStateUnpublishing       CSIVolumeClaimState = 1
	CSIVolumeClaimStateNodeDetached       CSIVolumeClaimState = 2
	CSIVolumeClaimStateControllerDetached CSIVolumeClaimState = 3
	CSIVolumeClaimStateFreed              CSIVolumeClaimState = 4
)

var claimStateNames = []string{"taken", "unpublishing", "node-detached", "controller-detached", "freed"}

func (s CSIVolumeClaimState) String() string {
	if s >= 0 && int(s) < len(claimStateNames) {
		return claimStateNames[s]
	}
	return fmt.Sprintf("CSIVolumeClaimState(%d)", int(s))
}

// Valid reports whether s is a defined state.
func (s CSIVolumeClaimState) Valid() bool { return s >= 0 && int(s) < len(claimStateNames) }

// MarshalJSON writes the state's name.
func (s CSIVolumeClaimState) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a state's name or number.
func (s *CSIVolumeClaimState) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		var n int
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("claim state: want a name or a number, got %s", b)
		}
		*s = CSIVolumeClaimState(n)
		return nil
	}
	for i, n := range claimStateNames {
		if n == name {
			*s = CSIVolumeClaimState(i)
			return nil
		}
	}
	return fmt.Errorf("claim state: unknown state %q", name)
}

// CSIVolumeClaim is one allocation's hold on a volume, persisted through
// every step of its release so that any leader can resume it.
type CSIVolumeClaim struct {
	AllocID        string
	NodeID         string
	ExternalNodeID string // the plugin's node ID for ControllerUnpublish
	Mode           CSIVolumeClaimMode
	AccessMode     CSIVolumeAccessMode
	AttachmentMode CSIVolumeAttachmentMode
	State          CSIVolumeClaimState

	Attempts      int
	LastError     string
	NextAttemptAt time.Time
	UpdatedAt     time.Time // stamped by the RPC handler, never by the FSM
	// ReleasedAt is when the claim left taken: the stamp of the request
	// that released it (its UpdatedAt then). Zero while taken, and on a
	// claim released before this field existed.
	ReleasedAt time.Time `json:",omitzero"`
	// Timeline is when the claim reached each state (ClaimStep), the
	// stamps of the requests that moved it.
	Timeline Timeline `json:",omitempty"`
	// ControllerPublish is set when, as the claim was taken, the volume's
	// plugin published volumes through a controller: its release then
	// unpublishes through one even if the plugin is gone or changed by
	// then, and waits for an instance rather than skip the step.
	ControllerPublish bool `json:",omitempty"`
	// Usage is what the node plugin last said of the volume where the
	// claim's allocation uses it (its usage and condition); nil until the
	// client reports it.
	Usage *CSIVolumeUsage `json:",omitempty"`
}

// Copy returns a copy.
func (c *CSIVolumeClaim) Copy() *CSIVolumeClaim {
	if c == nil {
		return nil
	}
	n := *c
	n.Timeline = slices.Clone(c.Timeline)
	n.Usage = c.Usage.Copy()
	return &n
}

// copyClaims copies a claim map; nil copies as an empty map, so that a
// copy of a volume at rest (stored with no claim maps) can be written to.
func copyClaims(m map[string]*CSIVolumeClaim) map[string]*CSIVolumeClaim {
	c := make(map[string]*CSIVolumeClaim, len(m))
	for k, v := range m {
		c[k] = v.Copy()
	}
	return c
}
