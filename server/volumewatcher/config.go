package volumewatcher

import (
	"context"
	"errors"
	"fmt"
	"github.com/berth-csi/berth/internal/clock"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// ErrInvalidConfig is wrapped by every Config.Validate error.
var ErrInvalidConfig = errors.New("volumewatcher: invalid config")

// Deps is what the watcher needs from the server that runs it. The volume
// and claim passed to the detach calls are the state store's: read-only.
type Deps interface {
	// State is the current state store (a snapshot restore replaces it).
	State() *state.StateStore
	// ApplyClaims writes a claim batch through raft and returns the
	// FSM's per-claim errors.
	ApplyClaims(ctx context.Context, req *structs.CSIVolumeClaimBatchRequest) ([]error, error)
	// NodeDetach has the claiming client unpublish and unstage the volume;
	// nil also when there is nothing to do (the node is down or gone).
	NodeDetach(ctx context.Context, vol *structs.CSIVolume, claim *structs.CSIVolumeClaim) error
	// ControllerDetach has a controller instance unpublish the volume from
	// the claiming node; nil also when the plugin does not publish.
	ControllerDetach(ctx context.Context, vol *structs.CSIVolume, claim *structs.CSIVolumeClaim) error
}

// Clock is the watcher's only source of time (clock.System for the wall
// clock).
type Clock = clock.Clock

// Config configures a Watcher.
type Config struct {
	Deps   Deps
	Logger hclog.Logger
	Clock  Clock
	// Backoff is the wait after a failed step, by its attempt: Delay(n)
	// after the n-th failure in a row of the same step.
	Backoff backoff.Policy
	// ReadBackoff is the wait after a failed read of the state store, by
	// the failures in a row.
	ReadBackoff backoff.Policy
	// Idle is the longest wait between two looks with nothing due.
	Idle time.Duration
}

// ClaimBackoff is a failed step's backoff: 1s doubling to a minute, each
// wait shortened by up to 20%.
func ClaimBackoff() backoff.Policy {
	return backoff.Policy{Initial: time.Second, Max: time.Minute, Multiplier: 2, Jitter: 0.2}
}

// DefaultConfig is the leader's configuration, without its Deps.
func DefaultConfig() Config {
	return Config{
		Logger:      hclog.NewNullLogger(),
		Clock:       clock.System{},
		Backoff:     ClaimBackoff(),
		ReadBackoff: backoff.Policy{Initial: time.Second, Max: 30 * time.Second, Multiplier: 2, Jitter: 0.2},
		Idle:        5 * time.Second,
	}
}

// Validate reports every missing or out-of-range field.
func (c *Config) Validate() error {
	var errs []error
	if c.Deps == nil {
		errs = append(errs, fmt.Errorf("%w: Deps is required", ErrInvalidConfig))
	}
	if c.Logger == nil {
		errs = append(errs, fmt.Errorf("%w: Logger is required (hclog.NewNullLogger for none)", ErrInvalidConfig))
	}
	if c.Clock == nil {
		errs = append(errs, fmt.Errorf("%w: Clock is required (clock.System for the wall clock)", ErrInvalidConfig))
	}
	for _, b := range []struct {
		name string
		p    backoff.Policy
	}{{"Backoff", c.Backoff}, {"ReadBackoff", c.ReadBackoff}} {
		if b.p.Initial <= 0 || b.p.Max < b.p.Initial {
			errs = append(errs, fmt.Errorf("%w: %s needs 0 < Initial <= Max, got %s and %s", ErrInvalidConfig, b.name, b.p.Initial, b.p.Max))
		}
	}
	if c.Idle <= 0 {
		errs = append(errs, fmt.Errorf("%w: Idle must be positive, got %s", ErrInvalidConfig, c.Idle))
	}
	return errors.Join(errs...)
}
