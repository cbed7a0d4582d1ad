package exec

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Limits is what a task may use of its node, enforced in a cgroup of its
// own: CPUShares is its weight under contention (its MHz, as Nomad's
// cpu.shares), Cpuset the cores it runs on ("" for any), MemoryBytes the
// hard limit past which the kernel kills it, and MemoryLowBytes, when the
// hard limit is above the task's ask (memory_max), the ask: under memory
// pressure the task is reclaimed down to it first.
type Limits struct {
	CPUShares      uint64
	Cpuset         string
	MemoryBytes    int64
	MemoryLowBytes int64
}

// CgroupParent is where tasks' cgroups are made: /berth/<name> in each
// cgroup v1 controller's hierarchy, or under the unified hierarchy.
const CgroupParent = "/berth"

// cgroupMount is the unified hierarchy's mount point.
const cgroupMount = "/sys/fs/cgroup"

// taskCgroup is a task's cgroup, v1 (one per controller) or v2.
type taskCgroup interface {
	add(pid int) error
	// oomKills counts the OOM kills in the group so far.
	oomKills() (uint64, error)
	// remove deletes the group once its processes are gone.
	remove() error
	// setCpus changes the cores the group's processes run on.
	setCpus(cpuset string) error
}

// v1Controllers are the cgroup v1 controllers a task's group is made in.
var v1Controllers = []cgroup1.Name{cgroup1.Memory, cgroup1.Cpu, cgroup1.Cpuset}

// newTaskCgroup makes a task's cgroup at group (CgroupParent/cgroupName),
// with its limits, on whichever hierarchy the node mounts.
func newTaskCgroup(group string, l *Limits) (taskCgroup, error) {
	res := &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: &l.MemoryBytes},
		CPU:    &specs.LinuxCPU{Shares: &l.CPUShares, Cpus: l.Cpuset},
	}
	if l.MemoryLowBytes > 0 {
		res.Memory.Reservation = &l.MemoryLowBytes
	}
	switch cgroups.Mode() {
	case cgroups.Unified:
		m, err := cgroup2.NewManager(cgroupMount, group, cgroup2.ToResources(res))
		if err != nil {
			return nil, fmt.Errorf("make cgroup %s: %w", group, err)
		}
		return v2Group{m}, nil
	case cgroups.Legacy, cgroups.Hybrid:
		cg, err := cgroup1.New(cgroup1.StaticPath(group), res, cgroup1.WithHierarchy(v1Hierarchy))
		if err != nil {
			return nil, fmt.Errorf("make cgroup %s: %w", group, err)
		}
		return v1Group{cg}, nil
	}
	return nil, errors.New("this node mounts no cgroups (neither v1 nor v2): a task's resources cannot be enforced")
}

// loadTaskCgroup finds a task's cgroup again (a client restart).
func loadTaskCgroup(group string) (taskCgroup, error) {
	switch cgroups.Mode() {
	case cgroups.Unified:
		m, err := cgroup2.Load(group)
		if err != nil {
			return nil, err
		}
		return v2Group{m}, nil
	case cgroups.Legacy, cgroups.Hybrid:
		cg, err := cgroup1.Load(cgroup1.StaticPath(group), cgroup1.WithHierarchy(v1Hierarchy))
		if err != nil {
			return nil, err
		}
		return v1Group{cg}, nil
	}
	return nil, errors.New("no cgroups")
}

// v1Hierarchy keeps the controllers tasks are limited with.
func v1Hierarchy() ([]cgroup1.Subsystem, error) {
	all, err := cgroup1.Default()
	if err != nil {
		return nil, err
	}
	var out []cgroup1.Subsystem
	for _, s := range all {
		for _, n := range v1Controllers {
			if s.Name() == n {
				out = append(out, s)
			}
		}
	}
	if len(out) != len(v1Controllers) {
		return nil, fmt.Errorf("this node's cgroup v1 lacks one of the memory, cpu and cpuset controllers a task is limited with")
	}
	return out, nil
}

type v1Group struct{ cg cgroup1.Cgroup }

func (g v1Group) add(pid int) error { return g.cg.AddProc(uint64(pid)) }

func (g v1Group) oomKills() (uint64, error) {
	m, err := g.cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return 0, err
	}
	if m.MemoryOomControl == nil {
		return 0, nil
	}
	return m.MemoryOomControl.OomKill, nil
}

func (g v1Group) remove() error { return g.cg.Delete() }

func (g v1Group) setCpus(cpuset string) error {
	return g.cg.Update(&specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: cpuset}})
}

type v2Group struct{ m *cgroup2.Manager }

func (g v2Group) add(pid int) error { return g.m.AddProc(uint64(pid)) }

func (g v2Group) oomKills() (uint64, error) {
	m, err := g.m.Stat()
	if err != nil {
		return 0, err
	}
	if m.MemoryEvents == nil {
		return 0, nil
	}
	return m.MemoryEvents.OomKill, nil
}

func (g v2Group) remove() error { return g.m.Delete() }

func (g v2Group) setCpus(cpuset string) error {
	return g.m.Update(&cgroup2.Resources{CPU: &cgroup2.CPU{Cpus: cpuset}})
}

// cgroupName is the name of a start of a task's cgroup: its alloc and
// task, and a stamp of the start, so that a start never shares a group
// with the one before it, which may still be going away.
func cgroupName(allocID, task string, at time.Time) string {
	return allocID + "." + task + "." + strconv.FormatInt(at.UnixNano(), 36)
}

// dropRecordedCgroup removes the cgroup a task gone while no client
// watched it left (best effort: it is empty once its processes are).
func dropRecordedCgroup(group string) {
	if group == "" {
		return
	}
	if g, err := loadTaskCgroup(group); err == nil {
		_ = g.remove()
	}
}

// removeWhenEmpty deletes the group, trying again for a moment while the
// kernel finishes taking the last processes out of it (a group that
// still holds one is busy).
func removeWhenEmpty(g taskCgroup) error {
	var err error
	for i := 0; i < 50; i++ {
		if err = g.remove(); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// SweepCgroups removes the empty task cgroups under CgroupParent whose
// allocation keep says nothing here runs, made more than minAge ago: what
// a client that died between making a task's group and recording its
// handle left. A group that still holds a process (another client's on
// the same host) is busy and stays. It returns the groups removed.
func SweepCgroups(keep func(allocID string) bool, minAge time.Duration) []string {
	dir := filepath.Join(cgroupMount, CgroupParent)
	if cgroups.Mode() != cgroups.Unified {
		dir = filepath.Join(cgroupMount, string(cgroup1.Memory), CgroupParent)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		allocID, _, ok := strings.Cut(e.Name(), ".")
		if !e.IsDir() || !ok || keep(allocID) {
			continue
		}
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < minAge {
			continue
		}
		group := path.Join(CgroupParent, e.Name())
		g, err := loadTaskCgroup(group)
		if err != nil || g.remove() != nil {
			continue
		}
		removed = append(removed, group)
	}
	return removed
}
