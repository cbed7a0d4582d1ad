package volumemanager

import (
	"errors"
	"fmt"

	"github.com/berth-csi/berth/client/csi"
)

// Sentinels, for errors.Is.
var (
	// ErrInvalidRequest: a request the manager refused before any call.
	ErrInvalidRequest = errors.New("volumemanager: invalid request")
	// ErrPluginNotRunning: the volume's plugin is not registered on this
	// node as a node (or monolith) plugin; retry when it is.
	ErrPluginNotRunning = errors.New("volumemanager: plugin not running on this node")
	// ErrConflict: the request contradicts how the volume is in use on
	// this node (another external volume under the same ID, another
	// attachment mode, another read-only flag for the same allocation, a
	// mount of an allocation whose unmount has started).
	ErrConflict = errors.New("volumemanager: conflicts with the volume's use on this node")
	// ErrCorruptUsage: the usage file cannot be read back.
	ErrCorruptUsage = errors.New("volumemanager: usage file is corrupt")
)

// Error is a failed step of a mount, unmount or expansion: which volume,
// for which allocation (none: a step about the volume alone), with which plugin, at which step (a CSI call such as
// NodeStageVolume, or a local one such as "record usage"), and why. It
// unwraps to the cause, so errors.Is, csi.IsFinal and csi.CodeOf see
// through it.
type Error struct {
	VolumeID string
	AllocID  string
	PluginID string
	Step     string
	Err      error
}

// Error reads `volume "data" for alloc 3f2a...: NodeStageVolume with
// plugin "hostpath": Unavailable: ...`: a plugin's error without the
// plugin and call it would name again.
func (e *Error) Error() string {
	msg := e.Err.Error()
	if ce, ok := e.Err.(*csi.Error); ok {
		msg = ce.Message
		if ce.GRPC {
			msg = ce.Code.String() + ": " + ce.Message
		}
	}
	if e.AllocID == "" { // a step for the volume, not an allocation (an expansion)
		return fmt.Sprintf("volume %q: %s with plugin %q: %s", e.VolumeID, e.Step, e.PluginID, msg)
	}
	return fmt.Sprintf("volume %q for alloc %s: %s with plugin %q: %s", e.VolumeID, e.AllocID, e.Step, e.PluginID, msg)
}

func (e *Error) Unwrap() error { return e.Err }
