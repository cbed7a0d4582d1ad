package agent

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"

	"github.com/berth-csi/berth/client"
	"github.com/berth-csi/berth/structs"
)

// ReservedConfig is `client { reserved { cpu, memory, cores } }`: what
// the node keeps for itself and berth's agents, never offered to
// allocations.
type ReservedConfig struct {
	CPU      int `hcl:"cpu,optional"`    // MHz
	MemoryMB int `hcl:"memory,optional"` // MiB
	Cores    int `hcl:"cores,optional"`
}

// MetaConfig is `client { meta { KEY = "value" ... } }`: what the
// operator says of the node, read by constraints as ${meta.KEY}.
type MetaConfig struct {
	Values hcl.Attributes `hcl:",remain"`
}

// UserConfig is `client { user { allowed, denied, denied_groups } }`: who
// the node's tasks may run as.
type UserConfig struct {
	// Allowed, when set, are the only users tasks may run as.
	Allowed []string `hcl:"allowed,optional"`
	// Denied are users tasks may never run as; unset is root (unless
	// allow_root_tasks).
	Denied []string `hcl:"denied,optional"`
	// DeniedGroups deny every user of these groups (primary or
	// supplementary); unset is structs.DefaultDeniedTaskGroups.
	DeniedGroups []string `hcl:"denied_groups,optional"`
}

// minVolumeStatsInterval is the shortest volume_stats_interval but 0.
const minVolumeStatsInterval = time.Second

// checkClient checks the client block's resources, meta and users, and
// reads meta's values (meta is decoded as attributes: any key).
func (c *Config) checkClient() error {
	cl := c.Client
	var errs []error
	if r := cl.Reserved; r != nil && (r.CPU < 0 || r.MemoryMB < 0 || r.Cores < 0) {
		errs = append(errs, fmt.Errorf("client: reserved: cpu, memory and cores must not be negative"))
	}
	if cl.CPUTotalCompute < 0 || cl.MemoryTotalMB < 0 {
		errs = append(errs, errors.New("client: cpu_total_compute and memory_total_mb must not be negative (0: what the node has)"))
	}
	if cl.VolumeStatsInterval != "" {
		d, err := time.ParseDuration(cl.VolumeStatsInterval)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("client: volume_stats_interval %q is not a duration (\"60s\", \"5m\"; \"0s\" never asks): %v", cl.VolumeStatsInterval, err))
		case d < 0:
			errs = append(errs, fmt.Errorf("client: volume_stats_interval %q is negative (\"0s\" never asks)", cl.VolumeStatsInterval))
		case d != 0 && d < minVolumeStatsInterval:
			errs = append(errs, fmt.Errorf("client: volume_stats_interval %q is less than %s: the plugins would be asked too often (\"0s\" never asks)",
				cl.VolumeStatsInterval, minVolumeStatsInterval))
		default:
			cl.volumeStatsInterval = &d
		}
	}
	if cl.MetaBlock != nil {
		cl.meta = map[string]string{}
		names := make([]string, 0, len(cl.MetaBlock.Values))
		for k := range cl.MetaBlock.Values {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			a := cl.MetaBlock.Values[k]
			var v string
			if diags := gohcl.DecodeExpression(a.Expr, nil, &v); diags.HasErrors() {
				errs = append(errs, fmt.Errorf("client: meta: %s (line %d) must be a string: %v", k, a.Range.Start.Line, diags.Errs()[0]))
				continue
			}
			if err := structs.ValidateMetaKey(k); err != nil {
				errs = append(errs, fmt.Errorf("client: meta (line %d): %w", a.Range.Start.Line, err))
				continue
			}
			cl.meta[k] = v
		}
	}
	if u := cl.User; u != nil {
		if cl.AllowRootTasks && slices.Contains(u.Denied, structs.RootUser) {
			errs = append(errs, errors.New("client: allow_root_tasks = true and user { denied } lists root: root is allow_root_tasks' "+
				"to allow or not; take root out of denied, or allow_root_tasks out"))
		}
		for _, list := range [][]string{u.Allowed, u.Denied} {
			for _, name := range list {
				if err := structs.ValidateTaskUser(name); err != nil {
					errs = append(errs, fmt.Errorf("client: user: %w", err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// applyClient carries the client block's resources, meta and users into
// the client's config.
func (c *Config) applyClient(ccfg *client.Config) {
	cl := c.Client
	ccfg.AllowRootTasks = cl.AllowRootTasks
	ccfg.CPUTotalCompute, ccfg.MemoryTotalMB = cl.CPUTotalCompute, cl.MemoryTotalMB
	if r := cl.Reserved; r != nil {
		ccfg.Reserved = &structs.NodeResources{CPU: r.CPU, MemoryMB: r.MemoryMB, Cores: r.Cores}
	}
	ccfg.Meta = cl.meta
	if cl.volumeStatsInterval != nil {
		ccfg.VolumeStatsInterval = *cl.volumeStatsInterval
	}
	if u := cl.User; u != nil {
		ccfg.Users = structs.TaskUserPolicy{Allowed: u.Allowed, Denied: u.Denied, DeniedGroups: u.DeniedGroups}
	}
}
