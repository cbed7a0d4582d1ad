package dynamicplugins

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/berth-csi/berth/structs"
)

// Where a plugin registration comes from.
const (
	SourceConfig = "config" // declared in the client config, run outside berth
	SourceTask   = "task"   // a plugin task of an allocation on this node
)

// MaxSocketPath is the longest path a unix socket can have (sun_path is
// 108 bytes with its terminating NUL on Linux).
const MaxSocketPath = 107

// PluginInfo is one CSI plugin instance on this node: how to reach it and
// who registered it. Registered values are immutable; the registry stores
// and hands out copies.
type PluginInfo struct {
	ID               string
	Type             structs.CSIPluginType
	Socket           string // absolute path of the plugin's unix socket
	ControllerSocket string // optional separate controller socket (controller and monolith only)
	AllocID          string // the plugin task's allocation; empty for SourceConfig
	Source           string // SourceConfig or SourceTask; empty means SourceConfig
	// MountDir is where the plugin sees its staging and publish dirs: a
	// plugin task's csi_plugin mount_dir inside its own mount namespace,
	// at which the task binds the host dir volumemanager.PluginHostDir.
	// Empty for a plugin that sees the host's paths (one run outside
	// berth).
	MountDir string
}

// Copy returns a copy.
func (p *PluginInfo) Copy() *PluginInfo {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// Key is how the registry knows a registration: the plugin's ID for a
// monolith, "ID/controller" or "ID/node" for one of a plugin's split
// instances, so that a node may run a plugin's controller and node side
// by side. (No plugin ID holds a '/'.)
func (p *PluginInfo) Key() string {
	if p.Type == structs.CSIPluginTypeMonolith {
		return p.ID
	}
	return p.ID + "/" + string(p.Type)
}

// overlaps reports whether instances of types a and b of one plugin
// serve a service in common: a monolith serves both.
func overlaps(a, b structs.CSIPluginType) bool {
	return a == b || a == structs.CSIPluginTypeMonolith || b == structs.CSIPluginTypeMonolith
}

// ProvidesNode reports whether the plugin serves the node service.
func (p *PluginInfo) ProvidesNode() bool {
	return p.Type == structs.CSIPluginTypeNode || p.Type == structs.CSIPluginTypeMonolith
}

// ProvidesController reports whether the plugin serves the controller
// service.
func (p *PluginInfo) ProvidesController() bool {
	return p.Type == structs.CSIPluginTypeController || p.Type == structs.CSIPluginTypeMonolith
}

// Validate names every wrong field of p, each error wrapping
// ErrInvalidPlugin.
func (p *PluginInfo) Validate() error {
	if p == nil {
		return fmt.Errorf("%w: nil", ErrInvalidPlugin)
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w %q: %s", ErrInvalidPlugin, p.ID, fmt.Sprintf(format, args...)))
	}
	switch {
	case p.ID == "":
		bad("an ID is required")
	case strings.ContainsFunc(p.ID, func(r rune) bool { return r == '/' || unicode.IsSpace(r) || unicode.IsControl(r) }):
		bad("the ID must not contain '/', spaces or control characters")
	}
	switch p.Type {
	case structs.CSIPluginTypeController, structs.CSIPluginTypeNode, structs.CSIPluginTypeMonolith:
	default:
		bad("type %q is not controller, node or monolith", p.Type)
	}
	checkSocket := func(field, path string) {
		switch {
		case !filepath.IsAbs(path):
			bad("%s %q must be an absolute path", field, path)
		case len(path) > MaxSocketPath:
			bad("%s %q is %d bytes, longer than a unix socket path may be (%d)", field, path, len(path), MaxSocketPath)
		}
	}
	checkSocket("socket", p.Socket)
	if p.ControllerSocket != "" {
		checkSocket("controller socket", p.ControllerSocket)
		if !p.ProvidesController() {
			bad("a controller socket is only for controller or monolith plugins, not %q", p.Type)
		}
	}
	if p.MountDir != "" && (!filepath.IsAbs(p.MountDir) || filepath.Clean(p.MountDir) != p.MountDir || p.MountDir == "/") {
		bad("mount dir %q must be a clean absolute path other than /", p.MountDir)
	}
	switch p.Source {
	case SourceConfig, "":
		if p.AllocID != "" {
			bad("a plugin from the client config has no allocation, but alloc %q was given", p.AllocID)
		}
	case SourceTask:
		if p.AllocID == "" {
			bad("a plugin task's registration needs its allocation ID")
		}
	default:
		bad("source %q is not %q or %q", p.Source, SourceConfig, SourceTask)
	}
	return errors.Join(errs...)
}
