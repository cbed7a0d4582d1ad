package structs

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// AllocStopReason says, as data, why the servers stopped an allocation:
// what the scheduler and the drainer decide on. The allocation's
// DesiredDescription says it in words, for people only: its wording may
// change, a decision must not. The numbers are persisted in raft and
// snapshots: append only, never renumber.
type AllocStopReason uint8

const (
	// AllocStopNone: the servers have not stopped it, or stopped it with
	// no reason recorded (a node that went down or a fenced client: its
	// client status, lost, says so; or a stop written before reasons were
	// recorded whose words are none of then's, see AllocStop.Legacy).
	AllocStopNone AllocStopReason = 0
	// AllocStopJob: its job was stopped.
	AllocStopJob AllocStopReason = 1
	// AllocStopUpdate: replaced by a newer version of its job, the
	// allocation's ReplacedByVersion.
	AllocStopUpdate AllocStopReason = 2
	// AllocStopCount: over its group's lowered count.
	AllocStopCount AllocStopReason = 3
	// AllocStopDrain: moved off its node by a drain of that node.
	AllocStopDrain AllocStopReason = 4
)

var allocStopReasonNames = []string{"none", "job-stop", "update", "count", "drain"}

func (r AllocStopReason) String() string {
	if int(r) < len(allocStopReasonNames) {
		return allocStopReasonNames[r]
	}
	return fmt.Sprintf("AllocStopReason(%d)", int(r))
}

// MarshalJSON writes the reason's name.
func (r AllocStopReason) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// UnmarshalJSON reads a reason's name or number.
func (r *AllocStopReason) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		var n uint8
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("allocation stop reason: want a name or a number, got %s", b)
		}
		*r = AllocStopReason(n)
		return nil
	}
	for i, n := range allocStopReasonNames {
		if n == name {
			*r = AllocStopReason(i)
			return nil
		}
	}
	return fmt.Errorf("allocation stop reason: unknown reason %q; want one of %s", name, andList(allocStopReasonNames))
}

// AllocStop is an allocation a plan (or a state write) stops, and why:
// Reason, with ReplacedByVersion for an update, is what the servers
// decide on; Description, the allocation's DesiredDescription, is for
// people. The StopFor functions build them.
type AllocStop struct {
	AllocID     string
	Description string
	// Reason is AllocStopNone in a plan written before stops carried
	// one: the state store fills it from Description (Legacy).
	Reason            AllocStopReason `json:",omitempty"`
	ReplacedByVersion uint64          `json:",omitempty"`
}

// StopForUpdate stops allocation allocID to be replaced by version of
// its job.
func StopForUpdate(allocID string, version uint64) AllocStop {
	return AllocStop{AllocID: allocID, Reason: AllocStopUpdate, ReplacedByVersion: version,
		Description: UpdateDescription(version)}
}

// StopForCount stops allocation allocID: its group's count was lowered
// to count.
func StopForCount(allocID string, count int) AllocStop {
	return AllocStop{AllocID: allocID, Reason: AllocStopCount, Description: fmt.Sprintf("count lowered to %d", count)}
}

// StopForDrain is the stop of an allocation a drain of node nodeID
// moves off it (the state's drain step names the allocations).
func StopForDrain(nodeID string) AllocStop {
	return AllocStop{Reason: AllocStopDrain, Description: DrainDescription(nodeID)}
}

// StopForJobStop is the stop of an allocation whose job was stopped.
func StopForJobStop() AllocStop {
	return AllocStop{Reason: AllocStopJob, Description: "its job was stopped"}
}

// The words of stops written before they carried a Reason, as the
// servers wrote them then. Frozen: Legacy reads old entries with them,
// whatever the wording of today's descriptions.
const (
	legacyJobStop = "its job was stopped"
	legacyUpdate  = "replaced by job version "
	legacyCount   = "count lowered to "
	legacyDrain   = "stopped to drain node "
)

// Legacy returns s with the Reason (and ReplacedByVersion) that a stop
// written before stops carried one meant, read from its Description in
// the words of then. A stop with a Reason, or whose words are none of
// those, is returned as it is (AllocStopNone: no decision counts it as a
// drain's or an update's). The state store applies it to the raft
// entries and snapshot rows it loads, so decisions never read words.
func (s AllocStop) Legacy() AllocStop {
	if s.Reason != AllocStopNone {
		return s
	}
	d := s.Description
	switch {
	case d == legacyJobStop:
		s.Reason = AllocStopJob
	case strings.HasPrefix(d, legacyDrain) && len(d) > len(legacyDrain):
		s.Reason = AllocStopDrain
	case strings.HasPrefix(d, legacyCount):
		if _, err := strconv.ParseUint(d[len(legacyCount):], 10, 64); err == nil {
			s.Reason = AllocStopCount
		}
	case strings.HasPrefix(d, legacyUpdate):
		if v, err := strconv.ParseUint(d[len(legacyUpdate):], 10, 64); err == nil {
			s.Reason, s.ReplacedByVersion = AllocStopUpdate, v
		}
	}
	return s
}
