package spec

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/berth-csi/berth/structs"
)

// Task defaults, as Nomad's.
const (
	DefaultKillTimeout    = 5 * time.Second
	DefaultHealthTimeout  = 30 * time.Second
	DefaultPluginMountDir = "/csi"
)

var (
	taskFields        = []string{"driver", "config", "env", "restart", "kill_timeout", "kill_signal", "volume_mount", "csi_plugin", "user", "resources"}
	resourcesFields   = []string{"cpu", "cores", "memory", "memory_max"}
	execConfigFields  = []string{"command", "args"}
	taskDrivers       = structs.TaskDrivers
	restartFields     = []string{"attempts", "interval", "delay", "mode"}
	restartModes      = []string{structs.RestartModeFail, structs.RestartModeDelay}
	volumeMountFields = []string{"volume", "destination", "read_only", "propagation_mode"}
	propagationModes  = []string{structs.PropagationPrivate, structs.PropagationHostToTask, structs.PropagationBidirectional}
	csiPluginFields   = []string{"id", "type", "mount_dir", "stage_publish_base_dir", "health_timeout"}
	csiPluginTypes    = []string{string(structs.CSIPluginTypeController), string(structs.CSIPluginTypeNode), string(structs.CSIPluginTypeMonolith)}
)

// task decodes one task block of a group.
func (p *parser) task(tf *field, name string, gs scope, jobType string, vols map[string]*groupVolume) *structs.Task {
	s := gs.labelled("task", name)
	t := &structs.Task{Name: name, KillTimeout: DefaultKillTimeout}
	fs := newFields()
	seen := fs.seen
	var mounts []*field
	var config *field // read once the driver is known, wherever it is set
	plugin := false   // a csi_plugin task's restart defaults differ
	for _, f := range tf.val.fields {
		plugin = plugin || f.name == "csi_plugin" && f.val.kind != kindNull
	}
	for _, f := range tf.val.fields {
		if f.val.kind == kindNull {
			continue
		}
		if f.name == "volume_mount" {
			mounts = append(mounts, f)
			continue
		}
		if !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "driver":
			if d, ok := p.str(f, s); ok {
				if !slices.Contains(taskDrivers, d) {
					msg := fmt.Sprintf(`%q is not supported; berth runs tasks with driver = "exec" or "docker"`, d)
					if sg := suggest(d, taskDrivers); sg != "" {
						msg += fmt.Sprintf("; did you mean %q?", sg)
					}
					p.bad(f.line, s, "driver", "%s", msg)
				}
				t.Driver = d
			}
		case "config":
			config = f
		case "env":
			t.Env = p.strMap(f, s)
		case "restart":
			if b := p.block(f, s); b != nil {
				t.Restart = p.restart(b, s.sub("restart"), jobType, plugin)
			}
		case "kill_timeout":
			if d, ok := p.duration(f, s); ok && d > 0 {
				t.KillTimeout = d
			}
		case "kill_signal":
			if sig, ok := p.str(f, s); ok {
				if !slices.Contains(structs.KillSignals, sig) {
					msg := fmt.Sprintf("%q is not a signal berth sends; use one of %s", sig, quoteList(structs.KillSignals))
					if sg := suggest(sig, structs.KillSignals); sg != "" {
						msg += fmt.Sprintf("; did you mean %q?", sg)
					}
					p.bad(f.line, s, "kill_signal", "%s", msg)
					continue
				}
				t.KillSignal = sig
			}
		case "csi_plugin":
			if b := p.block(f, s); b != nil {
				t.CSIPluginConfig = p.csiPlugin(b, s.sub("csi_plugin"))
			}
		case "resources":
			if b := p.block(f, s); b != nil {
				t.Resources = p.resources(b, s.sub("resources"))
			}
		case "user":
			if u, ok := p.str(f, s); ok {
				if err := structs.ValidateTaskUser(u); err != nil {
					p.errorf(f.line, s.field("user"), "%s%v", s.prefix(), err) // the error names the user
					continue
				}
				t.User = u
			}
		default:
			fs.unknown(p, f, s, taskFields)
		}
	}
	if !fs.has("driver") {
		p.missing(tf.line, s, "driver", `add driver = "exec" (a program on the host) or driver = "docker" (a container)`)
	}
	if config != nil {
		if b := p.block(config, s); b != nil {
			switch t.Driver {
			case structs.DriverDocker:
				t.Config = p.dockerConfig(b, config.line, s.sub("config"))
			case structs.DriverExec, "": // a driver left out is reported; read the config as exec's
				t.Config = p.execConfig(b, config.line, s.sub("config"))
			}
		}
	} else {
		hint := `add a config block with command = "/path/to/program"`
		if t.Driver == structs.DriverDocker {
			hint = `add a config block with image = "name:tag"`
		}
		p.missing(tf.line, s, "config", hint)
	}
	if t.Restart == nil {
		r := structs.DefaultRestartPolicy(jobType, plugin)
		t.Restart = &r
	}
	dests := map[string]int{}
	for _, f := range mounts {
		for _, b := range p.blocks(f, s) {
			if vm := p.volumeMount(b, s.sub("volume_mount"), gs, vols); vm != nil {
				if first, dup := dests[path.Clean(vm.Destination)]; dup && vm.Destination != "" {
					p.bad(b.line, s.sub("volume_mount"), "destination", "%q is already mounted by the volume_mount at line %d; give each its own destination", vm.Destination, first)
					continue
				}
				dests[path.Clean(vm.Destination)] = b.line
				t.VolumeMounts = append(t.VolumeMounts, vm)
			}
		}
	}
	return t
}

// resources reads a task's resources block: cpu (MHz) or cores, memory
// and memory_max (MiB), checked as the servers check them.
func (p *parser) resources(b *node, s scope) *structs.Resources {
	r := &structs.Resources{}
	fs := newFields()
	for _, f := range b.fields {
		if f.val.kind == kindNull || !p.once(fs.seen, f, s) {
			continue
		}
		var dst *int
		switch f.name {
		case "cpu":
			dst = &r.CPU
		case "cores":
			dst = &r.Cores
		case "memory":
			dst = &r.MemoryMB
		case "memory_max":
			dst = &r.MemoryMaxMB
		default:
			fs.unknown(p, f, s, resourcesFields)
			continue
		}
		if n, ok := p.integer(f, s); ok {
			if n <= 0 {
				p.bad(f.line, s, f.name, "must be more than 0, not %d; leave it out for the default", n)
				continue
			}
			*dst = n
		}
	}
	if err := r.Validate(); err != nil {
		p.badIn(b.line, s, "%v", err)
	}
	return r
}

// execConfig reads the exec driver's config block.
func (p *parser) execConfig(b *node, line int, s scope) map[string]any {
	cfg := map[string]any{}
	fs := newFields()
	seen := fs.seen
	for _, f := range b.fields {
		if f.val.kind == kindNull || !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "command":
			if c, ok := p.str(f, s); ok {
				if strings.TrimSpace(c) == "" {
					p.bad(f.line, s, "command", "is empty; name the program to run, e.g. \"/bin/sh\"")
					continue
				}
				cfg["command"] = c
			}
		case "args":
			cfg["args"] = p.strList(f, s)
		default:
			if slices.Contains(dockerConfigFields, f.name) {
				p.errorf(f.line, s.field(f.name), "%sunknown field %q; exec takes %s (%s is the docker driver's: set driver = \"docker\")",
					s.prefix(), f.name, strings.Join(execConfigFields, " and "), f.name)
				continue
			}
			fs.unknown(p, f, s, execConfigFields)
		}
	}
	if !fs.has("command") {
		p.missing(line, s, "command", `name the program to run, e.g. command = "/bin/sh"`)
	}
	return cfg
}

// restart reads a restart block over the defaults of the job type (or of
// a plugin task), then checks the policy as Nomad does.
func (p *parser) restart(b *node, s scope, jobType string, plugin bool) *structs.RestartPolicy {
	d := structs.DefaultRestartPolicy(jobType, plugin)
	r := &d
	seen := map[string]int{}
	for _, f := range b.fields {
		if f.val.kind == kindNull || !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "attempts":
			if n, ok := p.integer(f, s); ok {
				if n < 0 {
					p.bad(f.line, s, "attempts", "must be 0 or more, not %d", n)
					continue
				}
				r.Attempts = n
			}
		case "interval":
			if d, ok := p.duration(f, s); ok {
				r.Interval = d
			}
		case "delay":
			if d, ok := p.duration(f, s); ok {
				r.Delay = d
			}
		case "mode":
			if m, ok := p.oneOf(f, s, restartModes); ok {
				r.Mode = m
			}
		default:
			p.unknown(f, s, restartFields)
		}
	}
	switch {
	case r.Interval < structs.MinRestartInterval:
		p.bad(lineOr(seen, "interval", b.line), s, "interval", "%s is too short; it must be at least %s", r.Interval, structs.MinRestartInterval)
	case r.Attempts > 0 && r.Delay < structs.MinRestartDelay:
		p.bad(lineOr(seen, "delay", b.line), s, "delay", "%s is too short; it must be at least %s, so that a failing task restarts at most once a second",
			r.Delay, structs.MinRestartDelay)
	case time.Duration(r.Attempts)*r.Delay > r.Interval:
		p.badIn(b.line, s, "%d attempts with a delay of %s do not fit in an interval of %s; lower attempts or delay, or raise interval",
			r.Attempts, r.Delay, r.Interval)
	}
	if r.Attempts == 0 && r.Mode == structs.RestartModeDelay {
		p.bad(lineOr(seen, "mode", b.line), s, "mode", `"delay" with 0 attempts never restarts the task and never fails it; set attempts, or mode = "fail"`)
	}
	return r
}

// volumeMount reads one volume_mount block and checks it against the
// group's volumes.
func (p *parser) volumeMount(b *node, s, gs scope, vols map[string]*groupVolume) *structs.VolumeMount {
	vm := &structs.VolumeMount{PropagationMode: structs.PropagationPrivate}
	fs := newFields()
	seen := fs.seen
	for _, f := range b.fields {
		if f.val.kind == kindNull || !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "volume":
			vm.Volume, _ = p.str(f, s)
		case "destination":
			if d, ok := p.str(f, s); ok {
				if strings.TrimSpace(d) == "" {
					p.bad(f.line, s, "destination", `is empty; give the path the volume appears at in the task, e.g. "/data"`)
				}
				vm.Destination = d
			}
		case "read_only":
			vm.ReadOnly, _ = p.boolean(f, s)
		case "propagation_mode":
			if m, ok := p.oneOf(f, s, propagationModes); ok {
				vm.PropagationMode = m
			}
		default:
			fs.unknown(p, f, s, volumeMountFields)
		}
	}
	if !fs.has("volume") {
		p.missing(b.line, s, "volume", "name one of the group's volume blocks"+volumeHint(vols))
	}
	if !fs.has("destination") {
		p.missing(b.line, s, "destination", `give the path the volume appears at in the task, e.g. destination = "/data"`)
	}
	gv := vols[vm.Volume]
	if vm.Volume != "" && gv == nil {
		msg := fmt.Sprintf("%q is not a volume of %s", vm.Volume, gs.human)
		aliases := volumeAliases(vols)
		switch sg := suggest(vm.Volume, aliases); {
		case len(aliases) == 0:
			msg += fmt.Sprintf(`, which has no volume blocks; add a volume %q { ... } block to the group, with type = "csi" and the volume's source`, vm.Volume)
		case sg != "":
			msg += fmt.Sprintf("; did you mean %q?", sg)
		default:
			msg += "; its volumes are " + quoteList(aliases)
		}
		p.bad(seen["volume"], s, "volume", "%s", msg)
	}
	if vm.PropagationMode == structs.PropagationBidirectional {
		line := seen["propagation_mode"]
		switch {
		case vm.ReadOnly:
			p.bad(line, s, "propagation_mode", `"bidirectional" needs a read-write mount, but this volume_mount is read_only (line %d); use "host-to-task"`, seen["read_only"])
		case gv != nil && gv.req.ReadOnly:
			p.bad(line, s, "propagation_mode", `"bidirectional" needs a read-write volume, but volume %q is read_only (line %d); use "host-to-task"`,
				vm.Volume, gv.lines["read_only"])
		}
	}
	return vm
}

func volumeAliases(vols map[string]*groupVolume) []string {
	out := make([]string, 0, len(vols))
	for a := range vols {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

func volumeHint(vols map[string]*groupVolume) string {
	if len(vols) == 0 {
		return ` (the group has none yet: add a volume "name" { ... } block)`
	}
	return ": " + quoteList(volumeAliases(vols))
}

// csiPlugin reads a task's csi_plugin block.
func (p *parser) csiPlugin(b *node, s scope) *structs.TaskCSIPluginConfig {
	c := &structs.TaskCSIPluginConfig{MountDir: DefaultPluginMountDir, HealthTimeout: int64(DefaultHealthTimeout)}
	fs := newFields()
	seen := fs.seen
	for _, f := range b.fields {
		if f.val.kind == kindNull || !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "id":
			if id, ok := p.str(f, s); ok {
				p.checkName(f.line, s.sub("id"), structs.NamePluginID, id)
				c.ID = id
			}
		case "type":
			if t, ok := p.oneOf(f, s, csiPluginTypes); ok {
				c.Type = structs.CSIPluginType(t)
			}
		case "mount_dir":
			if d, ok := p.str(f, s); ok {
				if !path.IsAbs(d) {
					p.bad(f.line, s, "mount_dir", "%q must be an absolute path in the task, e.g. \"/csi\"", d)
				}
				c.MountDir = d
			}
		case "stage_publish_base_dir":
			if d, ok := p.str(f, s); ok {
				if !path.IsAbs(d) {
					p.bad(f.line, s, "stage_publish_base_dir", "%q must be an absolute path in the task, e.g. \"/local/csi\"", d)
				}
				c.StagePublishBaseDir = d
			}
		case "health_timeout":
			if d, ok := p.duration(f, s); ok {
				if d == 0 {
					p.bad(f.line, s, "health_timeout", "must be longer than 0s")
					continue
				}
				c.HealthTimeout = int64(d)
			}
		default:
			fs.unknown(p, f, s, csiPluginFields)
		}
	}
	if !fs.has("id") {
		p.missing(b.line, s, "id", `name the plugin volumes will use, e.g. id = "hostpath"`)
	}
	if !fs.has("type") {
		p.missing(b.line, s, "type", "one of "+quoteList(csiPluginTypes))
	}
	return c
}
