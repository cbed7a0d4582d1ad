package volumemanager

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/internal/backoff"
)

// Names under the data dir. The usage file shares the csi dir with the
// plugins' host dirs, so no plugin may be named like it (see checkPluginID).
const (
	clientDirName   = "client"
	csiDirName      = "csi"
	usageFileName   = "volumes.json"
	stagingDirName  = "staging"
	perAllocDirName = "per-alloc"
)

// Config is what a Manager needs.
type Config struct {
	// DataDir is the client's data dir; the manager keeps its usage
	// record and the plugins' host dirs under DataDir/client/csi.
	DataDir string
	// Registry is where the node's plugins are registered.
	Registry *dynamicplugins.Registry
	// Conns holds the connections to the plugins' sockets, shared with
	// the client's controller calls; nil means one of the manager's own.
	Conns  *csi.Pool
	Logger hclog.Logger
	// Retry paces the retries of a CSI call that failed with an error
	// that is not final (the operation may still be in progress); the
	// zero value means DefaultRetry.
	Retry backoff.Policy
}

// DefaultRetry retries a call that did not fail finally three more times,
// 100ms, 200ms and 400ms (less jitter) apart: long enough for a plugin's
// ABORTED (an operation pending on the volume) to clear, short enough to
// leave longer waits to the caller (the servers retry a node detach with
// their own backoff).
func DefaultRetry() backoff.Policy {
	return backoff.Policy{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2, Jitter: 0.2, MaxAttempts: 4}
}

// Validate names every wrong field.
func (c *Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("volumemanager: a data dir is required"))
	}
	if c.Registry == nil {
		errs = append(errs, errors.New("volumemanager: a plugin registry is required"))
	}
	return errors.Join(errs...)
}

// PluginsDir holds every plugin's host dir (see PluginHostDir).
func PluginsDir(dataDir string) string {
	return filepath.Join(dataDir, clientDirName, csiDirName)
}

// PluginHostDir is the host dir that holds plugin pluginID's staging and
// per-allocation dirs: DataDir/client/csi/<plugin ID>. A plugin task
// binds it at its mount_dir (with bidirectional propagation, so that the
// plugin's mounts show on the host).
func PluginHostDir(dataDir, pluginID string) string {
	return filepath.Join(PluginsDir(dataDir), pluginID)
}

// volumePaths are where a volume is staged and published for one
// allocation, on the host and as the plugin sees them.
type volumePaths struct {
	hostStaging, pluginStaging string
	hostTarget, pluginTarget   string
}

// pathsFor derives the paths of volume volumeID for allocation allocID
// with plugin p: the same relative paths under the plugin's host dir and
// under its MountDir (the host dir itself when it has none).
func pathsFor(dataDir string, p *dynamicplugins.PluginInfo, allocID, volumeID string) volumePaths {
	host := PluginHostDir(dataDir, p.ID)
	view := host
	if p.MountDir != "" {
		view = p.MountDir
	}
	staging := filepath.Join(stagingDirName, volumeID)
	target := filepath.Join(perAllocDirName, allocID, volumeID)
	return volumePaths{
		hostStaging: filepath.Join(host, staging), pluginStaging: filepath.Join(view, staging),
		hostTarget: filepath.Join(host, target), pluginTarget: filepath.Join(view, target),
	}
}

// checkComponent refuses an ID that cannot be one path component: empty,
// "." or "..", or holding a '/' or a NUL.
func checkComponent(field, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: the %s is required", ErrInvalidRequest, field)
	case id == "." || id == ".." || strings.ContainsAny(id, "/\x00"):
		return fmt.Errorf("%w: %s %q cannot name a directory", ErrInvalidRequest, field, id)
	}
	return nil
}

// CheckPluginID refuses a plugin ID that cannot be a plugin's own
// directory: not one path component, or a name the manager's own files use.
func CheckPluginID(id string) error {
	if err := checkComponent("plugin ID", id); err != nil {
		return err
	}
	if id == usageFileName || strings.HasPrefix(id, ".") {
		return fmt.Errorf("%w: plugin ID %q is reserved (the manager's own files are named so)", ErrInvalidRequest, id)
	}
	return nil
}
