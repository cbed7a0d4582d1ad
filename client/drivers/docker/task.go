package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/berth-csi/berth/structs"
)

// Labels berth puts on every container. The "berth." prefix is berth's:
// a task's own labels may not use it.
const (
	LabelPrefix    = "berth."
	LabelAllocID   = "berth.alloc_id"
	LabelJobID     = "berth.job_id"
	LabelNamespace = "berth.namespace"
	LabelGroup     = "berth.group"
	LabelTask      = "berth.task"
	// LabelStdoutPath and LabelStderrPath are the host files the
	// container's logs are copied to, for a reattach.
	LabelStdoutPath = "berth.stdout_path"
	LabelStderrPath = "berth.stderr_path"
	// LabelLogRoot is the dir the log files are opened beneath.
	LabelLogRoot = "berth.log_root"
)

// Where the task dir and the alloc dir are inside the container.
const (
	TaskMountPoint  = "/berth/local"
	AllocMountPoint = "/berth/alloc"
)

// sharedSubdirs are the dirs of the alloc dir bound under
// AllocMountPoint; its logs/ is not.
var sharedSubdirs = []string{"data", "tmp"}

// Network modes a task may ask for; "" is NetworkBridge. NetworkHost
// needs Config.AllowHostNetwork.
const (
	NetworkHost   = "host"
	NetworkBridge = "bridge"
	NetworkNone   = "none"
)

// defaultCapDrop are dropped from Docker's default set unless the task
// adds them back (within allow_caps): NET_RAW lets a container forge
// packets and, on the host's network, read other processes' traffic.
var defaultCapDrop = []string{"net_raw"}

// Mount is a bind mount into the container.
type Mount struct {
	// Source is the host path (a volume's publish path); it must exist.
	Source string
	// Destination is where the task sees it: absolute in the container,
	// or relative to TaskMountPoint.
	Destination string
	ReadOnly    bool
	// Propagation is structs.PropagationPrivate (the default),
	// PropagationHostToTask or PropagationBidirectional (read-write only;
	// the engine needs Source on a shared mount).
	Propagation string
	// Device says Source is a block device node (a block volume): the
	// engine makes it in the container at Destination, and allows it in
	// the container's device cgroup (read only when ReadOnly).
	Device bool
}

// TaskConfig is one start of a task.
type TaskConfig struct {
	AllocID, JobID, Namespace, Group, TaskName string
	// NodeName names this node in errors (a missing image).
	NodeName string
	// TaskDir and AllocDir are host dirs: TaskDir is bound at
	// TaskMountPoint, AllocDir's data/ and tmp/ under AllocMountPoint
	// (its logs/ is not). All exist and are absolute.
	TaskDir, AllocDir string
	// StdoutPath and StderrPath are host files appended with the
	// container's logs (a restart continues the same log), opened beneath
	// LogRoot (the alloc dir; "" is each file's own dir): no link below
	// it is followed.
	StdoutPath, StderrPath string
	LogRoot                string

	Image string
	// Command and Args replace the image's command; Args alone are the
	// image entrypoint's arguments. Entrypoint, when set, replaces the
	// image's.
	Command    string
	Args       []string
	Entrypoint []string

	Privileged bool
	// CapAdd and CapDrop change the container's capabilities from
	// Docker's default set, normalized ("sys_admin", "all"). CapAdd must
	// be within Config.AllowCaps.
	CapAdd, CapDrop []string
	// NetworkMode is NetworkBridge (""), NetworkHost or NetworkNone.
	NetworkMode string
	// Labels are added to berth's (see LabelPrefix).
	Labels map[string]string
	Env    map[string]string
	// Extra are more BERTH_ variables, set by the caller.
	Extra map[string]string
	// User is who the container runs as (name, uid, uid:gid); "" is the
	// image's user. Root (by either) needs AllowRoot, or an engine that
	// remaps root (user namespaces).
	User      string
	AllowRoot bool
	Mounts    []Mount
	// ForcePull pulls the image before every start.
	ForcePull bool
	// Plugin says the task is a CSI node plugin (a node or monolith
	// csi_plugin task): it gets the host's /dev (its devtmpfs: a device
	// made later shows, as loop devices do), /sys read-only, and a device
	// cgroup that lets it use block devices and /dev/loop-control, as a
	// node plugin must to stage and publish them; the rest of the device
	// cgroup is the engine's. A controller task gets none of it.
	Plugin bool
	// Resources are the container's limits; zero ones are none.
	Resources Resources
}

// Resources are a container's limits, as the engine takes them
// (HostConfig.Resources): CPU shares (the task's MHz), the cores it runs
// on, its memory limit and, under a higher limit, its reservation.
type Resources struct {
	CPUShares              int64
	Cpuset                 string
	MemoryBytes            int64
	MemoryReservationBytes int64
}

// spec is a checked task config, ready for the engine.
type spec struct {
	name    string
	labels  map[string]string
	env     []string
	cmd     []string
	entry   []string
	network string
	mounts  []mount.Mount
	devices []container.DeviceMapping
	rules   []string // device cgroup rules
	capAdd  []string
	capDrop []string
}

// resolve checks the config and builds the container's spec.
func (c *TaskConfig) resolve(dc Config) (*spec, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: task %q: %s", ErrInvalidTask, c.TaskName, fmt.Sprintf(format, args...))
	}
	if c.TaskName == "" || c.AllocID == "" {
		return nil, bad("config has no task name or alloc ID")
	}
	if c.Image == "" {
		return nil, bad("config has no image")
	}
	if c.Privileged && !dc.AllowPrivileged {
		return nil, fmt.Errorf("%w: task %q asks for a privileged container; allow them in the client's config with driver \"docker\" { allow_privileged = true }",
			ErrPrivilegedNotAllowed, c.TaskName)
	}
	allowed := dc.AllowCaps
	if allowed == nil {
		allowed = structs.DockerDefaultAllowCaps
	}
	if missing := structs.CapsNotAllowed(c.CapAdd, allowed); len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrCapsNotAllowed, structs.CapsTaskRefusal(c.TaskName, structs.DriverDocker, c.NodeName, missing))
	}
	for name, p := range map[string]string{"task dir": c.TaskDir, "alloc dir": c.AllocDir,
		"stdout log": c.StdoutPath, "stderr log": c.StderrPath} {
		if !filepath.IsAbs(p) {
			return nil, bad("%s %q is not an absolute path", name, p)
		}
	}
	s := &spec{name: containerName(c.TaskName, c.AllocID), capAdd: engineCaps(c.CapAdd), capDrop: engineCaps(capDrop(c.CapAdd, c.CapDrop))}
	switch c.NetworkMode {
	case "", NetworkBridge:
		s.network = NetworkBridge
	case NetworkHost:
		if !dc.AllowHostNetwork {
			return nil, fmt.Errorf("%w: %s", ErrHostNetworkNotAllowed, structs.HostNetworkTaskRefusal(c.TaskName, structs.DriverDocker, c.NodeName))
		}
		s.network = NetworkHost
	case NetworkNone:
		s.network = c.NetworkMode
	default:
		return nil, bad("network mode %q is not bridge, host or none", c.NetworkMode)
	}

	s.labels = map[string]string{}
	for k, v := range c.Labels {
		if strings.HasPrefix(k, LabelPrefix) {
			return nil, bad("label %q: the %q prefix is berth's own", k, LabelPrefix)
		}
		s.labels[k] = v
	}
	for k, v := range map[string]string{LabelAllocID: c.AllocID, LabelJobID: c.JobID, LabelNamespace: c.Namespace,
		LabelGroup: c.Group, LabelTask: c.TaskName, LabelStdoutPath: c.StdoutPath, LabelStderrPath: c.StderrPath,
		LabelLogRoot: c.LogRoot} {
		s.labels[k] = v
	}

	env := c.envMap()
	s.env = make([]string, 0, len(env))
	for k, v := range env {
		s.env = append(s.env, k+"="+v)
	}
	sort.Strings(s.env)
	if c.Command != "" {
		s.cmd = append([]string{structs.InterpolateEnv(c.Command, env)}, structs.InterpolateEnvAll(c.Args, env)...)
	} else if len(c.Args) > 0 {
		s.cmd = structs.InterpolateEnvAll(c.Args, env)
	}
	s.entry = structs.InterpolateEnvAll(c.Entrypoint, env)

	// The alloc dir's data/ and tmp/, not the dir itself: its logs/ are
	// berth's, which a container must not reach (see LogRoot).
	s.mounts = []mount.Mount{bindMount(c.TaskDir, TaskMountPoint, false, mount.PropagationRPrivate)}
	for _, d := range sharedSubdirs {
		s.mounts = append(s.mounts, bindMount(filepath.Join(c.AllocDir, d), path.Join(AllocMountPoint, d), false, mount.PropagationRPrivate))
	}
	if c.Plugin {
		// The devtmpfs alone, not the mounts under it (the host's
		// /dev/shm, /dev/pts): private, since the engine refuses a slave
		// bind of a private /dev, and device nodes the kernel makes later
		// (loop devices) show anyway, being files of the same fs.
		devs := bindMount("/dev", "/dev", false, mount.PropagationPrivate)
		devs.BindOptions.NonRecursive = true
		s.mounts = append(s.mounts, devs, bindMount("/sys", "/sys", true, mount.PropagationRPrivate))
		s.rules = PluginDeviceRules
	}
	for _, m := range c.Mounts {
		if m.Device {
			dm, err := m.device()
			if err != nil {
				return nil, bad("%v", err)
			}
			s.devices = append(s.devices, dm)
			continue
		}
		bm, err := m.resolve()
		if err != nil {
			return nil, bad("%v", err)
		}
		s.mounts = append(s.mounts, bm)
	}
	return s, nil
}

// PluginDeviceRules are the device cgroup rules a plugin task's container
// gets: every block device, and /dev/loop-control (10:237), which a
// plugin that serves images as loop devices needs.
var PluginDeviceRules = []string{"b *:* rwm", "c 10:237 rwm"}

// destination checks a volume mount's source and destination and returns
// where the container sees it.
func (m Mount) destination() (string, error) {
	if !filepath.IsAbs(m.Source) {
		return "", fmt.Errorf("volume source %q is not an absolute path", m.Source)
	}
	if m.Destination == "" {
		return "", fmt.Errorf("mount of %s has no destination", m.Source)
	}
	dst := path.Clean(m.Destination)
	relative := !path.IsAbs(dst)
	if relative {
		dst = path.Join(TaskMountPoint, dst)
	}
	hidden := map[string]string{"/": "the image's root", TaskMountPoint: "the task dir", AllocMountPoint: "the alloc dir"}
	for _, d := range sharedSubdirs {
		hidden[path.Join(AllocMountPoint, d)] = "the alloc dir's " + d + "/"
	}
	if what, ok := hidden[dst]; ok {
		return "", fmt.Errorf("destination %s would hide %s", dst, what)
	}
	if relative && !strings.HasPrefix(dst, TaskMountPoint+"/") {
		return "", fmt.Errorf("destination %q leaves the task dir", m.Destination)
	}
	return dst, nil
}

// device makes a block volume's node the engine's device mapping.
func (m Mount) device() (container.DeviceMapping, error) {
	dst, err := m.destination()
	if err != nil {
		return container.DeviceMapping{}, err
	}
	if strings.HasPrefix(dst, path.Dir(TaskMountPoint)+"/") {
		// The task and alloc dirs are the host's, mounted nodev: a device
		// node the engine made there could not be opened.
		return container.DeviceMapping{}, fmt.Errorf("block volume at %s: a container gets a block device outside the task and alloc dirs (they are nodev); "+
			"set the volume_mount's destination to an absolute path such as /dev/data", dst)
	}
	perms := "rwm"
	if m.ReadOnly {
		perms = "r"
	}
	return container.DeviceMapping{PathOnHost: filepath.Clean(m.Source), PathInContainer: dst, CgroupPermissions: perms}, nil
}

// resolve checks a volume mount and makes it the engine's.
func (m Mount) resolve() (mount.Mount, error) {
	dst, err := m.destination()
	if err != nil {
		return mount.Mount{}, err
	}
	var prop mount.Propagation
	switch m.Propagation {
	case "", structs.PropagationPrivate:
		prop = mount.PropagationRPrivate
	case structs.PropagationHostToTask:
		prop = mount.PropagationRSlave
	case structs.PropagationBidirectional:
		if m.ReadOnly {
			return mount.Mount{}, fmt.Errorf("mount at %s: bidirectional propagation needs a read-write mount", dst)
		}
		prop = mount.PropagationRShared
	default:
		return mount.Mount{}, fmt.Errorf("mount at %s: propagation mode %q is not private, host-to-task or bidirectional", dst, m.Propagation)
	}
	return bindMount(filepath.Clean(m.Source), dst, m.ReadOnly, prop), nil
}

func bindMount(src, dst string, readOnly bool, prop mount.Propagation) mount.Mount {
	return mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: readOnly,
		BindOptions: &mount.BindOptions{Propagation: prop}}
}

// envMap is the task's environment (on top of the image's): its own env,
// then Extra, then the BERTH_ variables, which neither can override.
func (c *TaskConfig) envMap() map[string]string {
	m := make(map[string]string, len(c.Env)+len(c.Extra)+4)
	for k, v := range c.Env {
		m[k] = v
	}
	for k, v := range c.Extra {
		m[k] = v
	}
	m["BERTH_ALLOC_ID"] = c.AllocID
	m["BERTH_TASK_NAME"] = c.TaskName
	m["BERTH_TASK_DIR"] = TaskMountPoint
	m["BERTH_ALLOC_DIR"] = AllocMountPoint
	return m
}

// nameInvalid is what a Docker container name may not hold
// ([a-zA-Z0-9][a-zA-Z0-9_.-]*).
var nameInvalid = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)

// containerName is berth-<task>-<alloc ID>. A task name with characters
// Docker refuses gets them replaced and a short hash of the original
// appended, so two such names of one alloc stay apart.
func containerName(task, allocID string) string {
	clean := nameInvalid.ReplaceAllString(task, "-")
	if clean != task {
		sum := sha256.Sum256([]byte(task))
		clean += "-" + hex.EncodeToString(sum[:4])
	}
	return "berth-" + clean + "-" + nameInvalid.ReplaceAllString(allocID, "-")
}

// capDrop is what a container drops: the task's cap_drop, and
// defaultCapDrop but what the task adds back.
func capDrop(add, drop []string) []string {
	if slices.Contains(add, structs.CapAll) || slices.Contains(drop, structs.CapAll) {
		return drop
	}
	out := slices.Clone(drop)
	for _, c := range defaultCapDrop {
		if !slices.Contains(add, c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// engineCaps writes capabilities as the engine takes them: "CAP_SYS_ADMIN",
// "ALL".
func engineCaps(caps []string) []string {
	if len(caps) == 0 {
		return nil
	}
	out := make([]string, len(caps))
	for i, c := range caps {
		if c == structs.CapAll {
			out[i] = "ALL"
		} else {
			out[i] = "CAP_" + strings.ToUpper(c)
		}
	}
	return out
}
