package allocrunner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berth-csi/berth/internal/backoff"
)

// Cores hands out a node's cores to the tasks that ask for whole cores
// (resources { cores }), each its own, and tells every other task which
// cores are left to share: a task's cpuset is its cores, or the shared
// ones, and a shared task's is changed as cores are taken and given back.
type Cores struct {
	mu       sync.Mutex
	usable   []int                // the cores tasks may run on, sorted
	owner    map[int]string       // core -> the task (alloc/task) that has it
	watchers map[int]func(string) // shared tasks' cpuset setters, by watch ID
	nextID   int
	// notifying keeps deliveries in the order of the changes: taken
	// before mu is let go, held while the watchers are called.
	notifying sync.Mutex
}

// NewCores makes the set of a node's cores: those the client may run on
// (its affinity mask), less the reserved lowest-numbered ones that the
// node keeps for itself (client { reserved { cores } }).
func NewCores(usable []int, reserved int) *Cores {
	u := slices.Clone(usable)
	slices.Sort(u)
	if reserved > 0 {
		u = u[min(reserved, len(u)):]
	}
	return &Cores{usable: u, owner: map[int]string{}, watchers: map[int]func(string){}}
}

// Take gives owner n cores of its own, the lowest free ones; the shared
// tasks lose them.
func (c *Cores) Take(owner string, n int) ([]int, error) {
	c.mu.Lock()
	var mine, free []int
	for _, core := range c.usable {
		switch c.owner[core] {
		case owner:
			mine = append(mine, core)
		case "":
			free = append(free, core)
		}
	}
	if len(mine) >= n {
		c.mu.Unlock()
		return mine[:n], nil
	}
	if len(mine)+len(free) < n {
		c.mu.Unlock()
		return nil, fmt.Errorf("the node has %d cores free of the %d it offers, and the task asks for %d", len(free), len(c.usable), n)
	}
	for _, core := range free[:n-len(mine)] {
		c.owner[core] = owner
		mine = append(mine, core)
	}
	slices.Sort(mine)
	c.notifyLocked()
	return mine, nil
}

// Claim records cores a task restored after a client restart still has.
func (c *Cores) Claim(owner string, cores []int) {
	c.mu.Lock()
	for _, core := range cores {
		if slices.Contains(c.usable, core) && c.owner[core] == "" {
			c.owner[core] = owner
		}
	}
	c.notifyLocked()
}

// Release gives owner's cores back to the shared tasks.
func (c *Cores) Release(owner string) {
	c.mu.Lock()
	for core, o := range c.owner {
		if o == owner {
			delete(c.owner, core)
		}
	}
	c.notifyLocked()
}

// Shared is the cpuset of the cores no task has for its own; all the
// usable ones when every core is taken (a shared task must run somewhere).
func (c *Cores) Shared() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sharedLocked()
}

func (c *Cores) sharedLocked() string {
	var free []int
	for _, core := range c.usable {
		if c.owner[core] == "" {
			free = append(free, core)
		}
	}
	if len(free) == 0 {
		free = c.usable
	}
	return CPUList(free)
}

// Watch calls set with the shared cpuset now and each time it changes,
// until cancel; a shared task's cpuset follows it. The first call is
// ordered with the changes' (none is lost between them). set must not
// call back into Cores.
func (c *Cores) Watch(set func(cpuset string)) (cancel func()) {
	c.mu.Lock()
	id := c.nextID
	c.nextID++
	c.watchers[id] = set
	shared := c.sharedLocked()
	c.notifying.Lock()
	c.mu.Unlock()
	set(shared)
	c.notifying.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.watchers, id)
	}
}

// notifyLocked tells the watchers the shared cpuset, and unlocks: they
// are called without the lock, in order of their IDs.
func (c *Cores) notifyLocked() {
	shared := c.sharedLocked()
	ids := make([]int, 0, len(c.watchers))
	for id := range c.watchers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	sets := make([]func(string), 0, len(ids))
	for _, id := range ids {
		sets = append(sets, c.watchers[id])
	}
	c.notifying.Lock()
	defer c.notifying.Unlock()
	c.mu.Unlock()
	for _, set := range sets {
		set(shared)
	}
}

// CPUList writes cores as a kernel cpu list ("0-2,5").
func CPUList(cores []int) string {
	var parts []string
	for i := 0; i < len(cores); {
		j := i
		for j+1 < len(cores) && cores[j+1] == cores[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cores[i]))
		} else {
			parts = append(parts, strconv.Itoa(cores[i])+"-"+strconv.Itoa(cores[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// cpusetTimeout bounds moving one task onto the shared cores.
const cpusetTimeout = 5 * time.Second

// coreOwner names a task to the node's Cores.
func (tr *taskRunner) coreOwner() string { return tr.r.cfg.Alloc.ID + "/" + tr.task.Name }

// takeCores gives a task that asks for cores its own, or a shared task the
// shared cores, as a cpuset; none without core management.
func (tr *taskRunner) takeCores(ctx context.Context) ([]int, string, error) {
	c := tr.r.cfg.Cores
	if c == nil {
		return nil, "", nil
	}
	n := tr.task.ResourcesOrDefault().Cores
	if n == 0 {
		return nil, c.Shared(), nil
	}
	// The cores may still be a stopping task's, which the scheduler
	// counts as free once it is asked to stop: wait for them a while.
	var cores []int
	err := backoff.Retry(ctx, coresWait, func(error) bool { return false }, func(context.Context) error {
		var err error
		cores, err = c.Take(tr.coreOwner(), n)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("task %q: cores on node %q: %w", tr.task.Name, tr.r.nodeName(), err)
	}
	return cores, CPUList(cores), nil
}

// coresWait is how long a start waits for cores another task is giving
// back: about a minute, the longest a kill timeout usually runs.
var coresWait = backoff.Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second, MaxAttempts: 20, Jitter: 0.2}

// followSharedCores keeps a running shared task's cpuset on the shared
// cores as tasks take and give back cores of their own, until the
// returned func is called; a task with cores of its own keeps them.
func (tr *taskRunner) followSharedCores(ctx context.Context, h taskHandle) func() {
	c := tr.r.cfg.Cores
	if c == nil || tr.task.ResourcesOrDefault().Cores > 0 {
		return func() {}
	}
	set := func(cpuset string) {
		// Bounded: every other task's cores wait on this (an engine
		// that does not answer must not hold them up).
		sctx, cancel := context.WithTimeout(ctx, cpusetTimeout)
		defer cancel()
		if err := h.setCpuset(sctx, cpuset); err != nil {
			tr.r.logger.Warn("cannot move the task onto the shared cores", "task", tr.task.Name, "cpuset", cpuset, "error", err)
		}
	}
	return c.Watch(set) // a reattached task, or a change between its start and now, is set at once
}

// releaseCores gives the task's own cores back when it runs no more here.
func (tr *taskRunner) releaseCores() {
	if c := tr.r.cfg.Cores; c != nil {
		c.Release(tr.coreOwner())
	}
}
