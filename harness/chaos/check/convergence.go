package check

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Convergence compares the servers' final volume tables (server -> volume
// ID -> value) once the cluster has settled, and reports every volume on
// which they differ and every acknowledged write a server lacks: a
// register answered OK must be present on every server unless a
// deregister that may have followed it succeeded or may have; a deregister
// answered OK must be absent unless a register may have followed it.
func Convergence(finals map[string]map[string]Value, history []Operation) []Violation {
	servers := make([]string, 0, len(finals))
	for s := range finals {
		servers = append(servers, s)
	}
	sort.Strings(servers)
	out := disagreements(servers, finals)
	for _, w := range acknowledged(history) {
		for _, s := range servers {
			_, present := finals[s][w.op.VolumeID]
			if present == w.present {
				continue
			}
			state := "missing"
			if !w.present {
				state = "still present"
			}
			out = append(out, Violation{
				Check:    "convergence",
				VolumeID: w.op.VolumeID,
				Detail: fmt.Sprintf("acknowledged %s (client %d, called at %s) is %s on server %s",
					w.op.Kind, w.op.Client, time.Duration(w.op.Call), state, s),
			})
		}
	}
	return out
}

// disagreements reports each volume that not every server has, or that
// servers have with different values.
func disagreements(servers []string, finals map[string]map[string]Value) []Violation {
	ids := map[string]bool{}
	for _, vols := range finals {
		for id := range vols {
			ids[id] = true
		}
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	var out []Violation
	for _, id := range sorted {
		views := make([]string, len(servers))
		first, firstOK := finals[servers[0]][id]
		agree := true
		for i, s := range servers {
			v, ok := finals[s][id]
			views[i] = s + "=absent"
			if ok {
				views[i] = s + "=" + v.String()
			}
			agree = agree && ok == firstOK && v == first
		}
		if !agree {
			out = append(out, Violation{Check: "convergence", VolumeID: id,
				Detail: "servers disagree: " + strings.Join(views, ", ")})
		}
	}
	return out
}

// lastingWrite is an acknowledged write that must show in the final state.
type lastingWrite struct {
	op      Operation
	present bool // the volume must be present (a register) or absent
}

// acknowledged returns, per volume, the latest acknowledged write that no
// write of the opposite kind may have overtaken: one answered OK, or
// indeterminate, that did not return before the acknowledged one was
// called.
func acknowledged(history []Operation) []lastingWrite {
	byVolume := map[string][]Operation{}
	var ids []string
	for _, op := range history {
		if op.Kind != KindRegister && op.Kind != KindDeregister {
			continue
		}
		if _, ok := byVolume[op.VolumeID]; !ok {
			ids = append(ids, op.VolumeID)
		}
		byVolume[op.VolumeID] = append(byVolume[op.VolumeID], op)
	}
	sort.Strings(ids)
	var out []lastingWrite
	for _, id := range ids {
		if w, ok := lasting(byVolume[id]); ok {
			out = append(out, w)
		}
	}
	return out
}

// lasting finds the latest acknowledged write of one volume's writes that
// no write of the opposite kind may have overtaken.
func lasting(writes []Operation) (lastingWrite, bool) {
	var best lastingWrite
	found := false
	for _, w := range writes {
		if w.Outcome != OutcomeOK || (found && w.Call < best.op.Call) {
			continue
		}
		overtaken := false
		for _, o := range writes {
			if o.Kind == w.Kind {
				continue
			}
			ret := o.Return
			switch o.Outcome {
			case OutcomeOK:
			case OutcomeIndeterminate:
				ret = math.MaxInt64
			default:
				continue
			}
			if ret >= w.Call {
				overtaken = true
				break
			}
		}
		if !overtaken {
			best, found = lastingWrite{op: w, present: w.Kind == KindRegister}, true
		}
	}
	return best, found
}
