package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/cmd/berth/internal/spec"
)

var volumeRegisterCommand = &command{
	name:     "volume register",
	synopsis: "Register an existing CSI volume",
	help: `[options] <file>

  Register a volume that already exists in the storage provider, from a
  volume spec in HCL or JSON (see "Specs" in the documentation). The spec
  must name the provider's volume in external_id. Registering a volume that
  is already registered updates its mutable fields. If <file> is "-", the
  spec is read from standard input. To have the plugin make a new volume,
  use "berth volume create".
`,
	run: runVolumeRegister,
}

func runVolumeRegister(ctx context.Context, m *meta, args []string) int {
	vol, c, status := m.specCommand(ctx, args, spec.ForRegister)
	if vol == nil {
		return status
	}
	warnings, _, err := c.CSIVolumes().Register(vol)
	if err != nil {
		return m.fail("%s", apiError("register volume "+strconv.Quote(vol.ID), err))
	}
	for _, w := range warnings {
		fmt.Fprintf(m.stderr, "Warning: %s\n", w)
	}
	fmt.Fprintf(m.stdout, "Volume %q registered\n", vol.ID)
	return exitOK
}

// specCommand is the start of a command that takes one volume spec file:
// parse the arguments and the spec, and make the API client. On failure vol
// is nil and status is the exit status, the problem already reported.
func (m *meta) specCommand(ctx context.Context, args []string, purpose spec.Purpose) (*api.VolumeSpec, *api.Client, int) {
	pos, status, ok := m.parse(m.flagSet(), args, 1, 1)
	if !ok {
		return nil, nil, status
	}
	vol, err := m.readVolumeSpec(pos[0], purpose)
	if err != nil {
		return nil, nil, m.fail("%v", err)
	}
	c, err := m.client(ctx)
	if err != nil {
		return nil, nil, m.fail("%v", err)
	}
	return vol, c, exitOK
}

// readVolumeSpec parses a spec file, or standard input for "-", and checks
// it for purpose.
func (m *meta) readVolumeSpec(path string, purpose spec.Purpose) (*api.VolumeSpec, error) {
	if path != "-" {
		vol, err := spec.ParseVolumeFileFor(path, purpose)
		return vol, specError("volume", err)
	}
	src, err := io.ReadAll(m.stdin)
	if err != nil {
		return nil, fmt.Errorf("cannot read the volume spec from standard input: %w", err)
	}
	vol, err := spec.ParseVolumeFor("<stdin>", src, purpose)
	return vol, specError("volume", err)
}

// specError puts each of several problems of a spec on its own line under
// the "Error:" line; kind names the spec ("volume", "job").
func specError(kind string, err error) error {
	var many interface{ Unwrap() []error }
	if errors.As(err, &many) && len(many.Unwrap()) > 1 {
		return fmt.Errorf("the %s spec has %d problems:\n%w", kind, len(many.Unwrap()), err)
	}
	return err
}

var volumeDeregisterCommand = &command{
	name:     "volume deregister",
	synopsis: "Deregister a CSI volume",
	help: `[options] <volume>

  Remove a volume from berth. The volume itself is left in the storage
  provider. A volume that allocations still claim is refused; with -force
  it is removed once every claiming allocation has stopped. The volume may
  be given by a unique prefix of its ID.

Deregister Options:

  -force
    Deregister even while claims remain, if their allocations have stopped.
`,
	run: runVolumeDeregister,
}

func runVolumeDeregister(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	force := fs.Bool("force", false, "")
	pos, status, ok := m.parse(fs, args, 1, 1)
	if !ok {
		return status
	}
	c, id, code := volumeStatus.connect(ctx, m, pos[0])
	if c == nil {
		return code
	}
	if _, err := c.CSIVolumes().Deregister(id, *force); err != nil {
		return m.fail("%s", apiError("deregister volume "+strconv.Quote(id), err))
	}
	fmt.Fprintf(m.stdout, "Volume %q deregistered\n", id)
	return exitOK
}
