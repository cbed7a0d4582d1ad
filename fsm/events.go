package fsm

import "github.com/berth-csi/berth/state/stream"

// Events is the event stream's broker: the change events of every entry
// this FSM applied, from its state stores, across restores (a restore
// moves the broker's floor: the subscribers behind it must list again).
func (f *FSM) Events() *stream.Broker { return f.events }
