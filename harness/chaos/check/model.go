package check

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// volumeState is one volume's entry in the table: absent, or present with
// a value. It is comparable, so porcupine's == equality holds.
type volumeState struct {
	present bool
	value   Value
}

func (s volumeState) String() string {
	if !s.present {
		return "absent"
	}
	return "present(" + s.value.String() + ")"
}

// modelInput and modelOutput are what porcupine passes to the model.
type modelInput struct {
	volumeID string
	kind     Kind
	value    Value
}

type modelOutput struct {
	outcome Outcome
	value   Value
}

// volumeModel is the volume table, partitioned per volume ID; its state is
// one volume's. Register makes an absent volume present, updates a present
// one with the same immutable fields, and conflicts with one that has other
// immutable fields. Deregister makes a present volume absent (or conflicts,
// when it is claimed: claims are not modelled) and finds no absent one.
// Read returns the state. An indeterminate write takes whatever step its
// success would take.
func volumeModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionByVolume,
		Init:      func() interface{} { return volumeState{} },
		Step: func(state, input, output interface{}) (bool, interface{}) {
			return step(state.(volumeState), input.(modelInput), output.(modelOutput))
		},
		DescribeOperation: func(input, output interface{}) string {
			in, out := input.(modelInput), output.(modelOutput)
			switch {
			case in.kind == KindRegister:
				return fmt.Sprintf("register(%s) -> %s", in.value, out.outcome)
			case in.kind == KindRead && out.outcome == OutcomeOK:
				return fmt.Sprintf("read -> %s", out.value)
			}
			return fmt.Sprintf("%s -> %s", in.kind, out.outcome)
		},
		DescribeState: func(state interface{}) string { return state.(volumeState).String() },
		DescribeOperationMetadata: func(info interface{}) string {
			if info == nil {
				return ""
			}
			return info.(string)
		},
	}
}

// step is the sequential specification of one volume.
func step(s volumeState, in modelInput, out modelOutput) (bool, volumeState) {
	switch in.kind {
	case KindRegister:
		conflict := s.present && s.value.Immutable != in.value.Immutable
		next := volumeState{present: true, value: in.value}
		switch out.outcome {
		case OutcomeOK:
			return !conflict, next
		case OutcomeConflict:
			return conflict, s
		case OutcomeIndeterminate:
			if conflict {
				return true, s
			}
			return true, next
		}
	case KindDeregister:
		switch out.outcome {
		case OutcomeOK:
			return s.present, volumeState{}
		case OutcomeNotFound:
			return !s.present, s
		case OutcomeConflict:
			return s.present, s
		case OutcomeIndeterminate:
			return true, volumeState{}
		}
	case KindRead:
		switch out.outcome {
		case OutcomeOK:
			return s.present && s.value == out.value, s
		case OutcomeNotFound:
			return !s.present, s
		}
	}
	return false, s
}

// partitionByVolume splits a history into one history per volume ID, in
// a stable order so a visualisation reads the same from run to run.
func partitionByVolume(history []porcupine.Operation) [][]porcupine.Operation {
	byVolume := map[string][]porcupine.Operation{}
	var ids []string
	for _, op := range history {
		id := op.Input.(modelInput).volumeID
		if _, ok := byVolume[id]; !ok {
			ids = append(ids, id)
		}
		byVolume[id] = append(byVolume[id], op)
	}
	sort.Strings(ids)
	out := make([][]porcupine.Operation, 0, len(ids))
	for _, id := range ids {
		out = append(out, byVolume[id])
	}
	return out
}
