package check

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// LinearResult is the verdict of Linearizable.
type LinearResult struct {
	OK       bool // every volume's history is linearizable
	TimedOut bool // the search ran out of time before a verdict; OK is false

	Checked       int // operations given to the model
	Indeterminate int // of those, writes that may or may not have happened
	Dropped       int // refused operations and unanswered reads, left out
	Volumes       int // partitions checked
	// Failed is the volumes whose own history is not linearizable (or
	// whose search timed out), sorted; empty when OK.
	Failed []string

	// VisualizationPath is the HTML file porcupine wrote when OK is false:
	// each volume's history with the longest linearizations it found.
	VisualizationPath string
}

// String renders r for the run's report.
func (r LinearResult) String() string {
	verdict := "linearizable"
	switch {
	case r.TimedOut:
		verdict = "unknown (timed out)"
	case !r.OK:
		verdict = "NOT linearizable"
	}
	s := fmt.Sprintf("%s: %d operations (%d indeterminate, %d dropped) on %d volumes",
		verdict, r.Checked, r.Indeterminate, r.Dropped, r.Volumes)
	if len(r.Failed) > 0 {
		s += "; failing volumes: " + strings.Join(r.Failed, ", ")
	}
	if r.VisualizationPath != "" {
		s += "; see " + r.VisualizationPath
	}
	return s
}

// Linearizable checks history against the volume table model. An
// indeterminate write is given a response at the end of time, so it may
// take effect at any point after it was called, or never be seen. Refused
// operations and reads without an answer are dropped. timeout bounds the
// search (0: none). When the history is not linearizable, or the search
// timed out, and vizPath is not empty, porcupine's visualisation is written
// there; the error is about writing it.
func Linearizable(history []Operation, vizPath string, timeout time.Duration) (LinearResult, error) {
	var res LinearResult
	ops := make([]porcupine.Operation, 0, len(history))
	volumes := map[string]bool{}
	for _, op := range history {
		if dropped(op) {
			res.Dropped++
			continue
		}
		ret := op.Return
		if op.Outcome == OutcomeIndeterminate {
			ret = math.MaxInt64
			res.Indeterminate++
		}
		volumes[op.VolumeID] = true
		ops = append(ops, porcupine.Operation{
			ClientId: op.Client,
			Input:    modelInput{volumeID: op.VolumeID, kind: op.Kind, value: op.Input},
			Call:     op.Call,
			Output:   modelOutput{outcome: op.Outcome, value: op.Output},
			Return:   ret,
			Metadata: fmt.Sprintf("volume %s, client %d, server %s", op.VolumeID, op.Client, op.Server),
		})
	}
	res.Checked, res.Volumes = len(ops), len(volumes)

	model := volumeModel()
	verdict, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	res.OK = verdict == porcupine.Ok
	res.TimedOut = verdict == porcupine.Unknown
	if res.OK {
		return res, nil
	}
	res.Failed = failedVolumes(model, ops, timeout)
	if vizPath == "" {
		return res, nil
	}
	if err := porcupine.VisualizePath(model, info, vizPath); err != nil {
		return res, fmt.Errorf("check: write the linearizability visualisation: %w", err)
	}
	res.VisualizationPath = vizPath
	return res, nil
}

// failedVolumes checks each volume's operations on their own and returns
// the volumes that do not pass, sorted.
func failedVolumes(model porcupine.Model, ops []porcupine.Operation, timeout time.Duration) []string {
	byVolume := map[string][]porcupine.Operation{}
	for _, op := range ops {
		id := op.Input.(modelInput).volumeID
		byVolume[id] = append(byVolume[id], op)
	}
	var failed []string
	for id, vops := range byVolume {
		if porcupine.CheckOperationsTimeout(model, vops, timeout) != porcupine.Ok {
			failed = append(failed, id)
		}
	}
	slices.Sort(failed)
	return failed
}

// dropped says whether op says nothing about the state: a definite failure
// that did not read the table, a read with no answer, or a malformed entry.
func dropped(op Operation) bool {
	switch {
	case op.Outcome == OutcomeRefused, op.Outcome == 0:
		return true
	case op.Kind == KindRead && op.Outcome == OutcomeIndeterminate:
		return true
	}
	return false
}
