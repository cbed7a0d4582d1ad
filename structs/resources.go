package structs

import (
	"fmt"
	"strings"
)

// Task resource defaults, as Nomad's: what a task that sets no
// `resources` block is given, enforced and accounted.
const (
	DefaultTaskCPU      = 100 // MHz
	DefaultTaskMemoryMB = 300
	// MinTaskMemoryMB is the least memory a task may ask for: less is not
	// enough for a process and its page tables.
	MinTaskMemoryMB = 10
)

// Resources is a task's `resources` block: CPU in MHz (a share of the
// node's total compute, weighted under contention) or Cores (whole cores
// of its own), memory in MiB (the hard limit, and what the scheduler
// reserves), and MemoryMaxMB, a higher hard limit the task may burst to
// while the node has memory to spare (0: none). Zero CPU with zero Cores,
// or zero memory, is the default.
type Resources struct {
	CPU         int `json:",omitempty"`
	Cores       int `json:",omitempty"`
	MemoryMB    int `json:",omitempty"`
	MemoryMaxMB int `json:",omitempty"`
}

// Resources is what the task asks for, its defaults filled in.
func (t *Task) ResourcesOrDefault() Resources {
	var r Resources
	if t.Resources != nil {
		r = *t.Resources
	}
	if r.CPU == 0 && r.Cores == 0 {
		r.CPU = DefaultTaskCPU
	}
	if r.MemoryMB == 0 {
		r.MemoryMB = DefaultTaskMemoryMB
	}
	return r
}

// MemoryLimitMB is the task's hard memory limit: MemoryMaxMB when it is
// set, else MemoryMB.
func (r Resources) MemoryLimitMB() int { return max(r.MemoryMB, r.MemoryMaxMB) }

// validate checks a resources block.
func (r *Resources) validate(p *problems, at string) {
	if r == nil {
		return
	}
	at += "resources: "
	switch {
	case r.CPU < 0:
		p.add("%scpu %d must not be negative (MHz; 0 is the default, %d)", at, r.CPU, DefaultTaskCPU)
	case r.Cores < 0:
		p.add("%scores %d must not be negative", at, r.Cores)
	case r.CPU > 0 && r.Cores > 0:
		p.add("%scpu and cores are two ways to ask for CPU: give one (cpu = MHz shared, or cores = whole cores of the task's own)", at)
	}
	switch {
	case r.MemoryMB < 0:
		p.add("%smemory %d must not be negative (MiB; 0 is the default, %d)", at, r.MemoryMB, DefaultTaskMemoryMB)
	case r.MemoryMB > 0 && r.MemoryMB < MinTaskMemoryMB:
		p.add("%smemory %d MiB is under the least a task may have, %d MiB", at, r.MemoryMB, MinTaskMemoryMB)
	}
	if r.MemoryMaxMB != 0 {
		mem := r.MemoryMB
		if mem == 0 {
			mem = DefaultTaskMemoryMB
		}
		if r.MemoryMaxMB < mem {
			p.add("%smemory_max %d MiB must be at least memory (%d MiB): it is the limit a task may burst to above memory",
				at, r.MemoryMaxMB, mem)
		}
	}
}

// Validate checks a resources block on its own: the jobspec parser's
// check, as Job.Validate's.
func (r *Resources) Validate() error {
	var p problems
	r.validate(&p, "")
	if len(p.list) > 0 {
		return NewError(CodeBadRequest, "%s", p.String())
	}
	return nil
}

// Copy returns a copy.
func (r *Resources) Copy() *Resources {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

// Ask is what a group's allocation takes of a node: its tasks' CPU (MHz;
// a task with cores takes their compute), memory (MiB, not memory_max:
// that is a burst, not a reservation) and cores, summed.
type Ask struct {
	CPU      int
	MemoryMB int
	Cores    int
}

// Add sums two asks.
func (a Ask) Add(b Ask) Ask {
	return Ask{CPU: a.CPU + b.CPU, MemoryMB: a.MemoryMB + b.MemoryMB, Cores: a.Cores + b.Cores}
}

// GroupAsk is what one allocation of the group takes, with mhzPerCore the
// node's compute per core (what a task's cores stand for in MHz; 0 when
// the node is not known).
func (tg *TaskGroup) GroupAsk(mhzPerCore int) Ask {
	var a Ask
	for _, t := range tg.Tasks {
		if t == nil {
			continue
		}
		r := t.ResourcesOrDefault()
		a.MemoryMB += r.MemoryMB
		a.Cores += r.Cores
		if r.Cores > 0 {
			a.CPU += r.Cores * mhzPerCore
		} else {
			a.CPU += r.CPU
		}
	}
	return a
}

// NodeResources is what a node's client found it has (Node.Resources) or
// keeps for itself (Node.Reserved): compute in MHz over its cores, memory
// in MiB.
type NodeResources struct {
	CPU      int // total compute, MHz
	Cores    int
	MemoryMB int
}

// Copy returns a copy.
func (r *NodeResources) Copy() *NodeResources {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

// MHzPerCore is the compute of one core.
func (r *NodeResources) MHzPerCore() int {
	if r == nil || r.Cores == 0 {
		return 0
	}
	return r.CPU / r.Cores
}

// Capacity is what the node offers allocations: its resources less what
// its client reserves; nil when the client did not report them (one
// older than resources, which the scheduler does not limit).
func (n *Node) Capacity() *NodeResources {
	if n.Resources == nil {
		return nil
	}
	c := *n.Resources
	if r := n.Reserved; r != nil {
		// Reserved cores are compute no task gets, shared or not.
		c.CPU = max(c.CPU-r.CPU-r.Cores*n.Resources.MHzPerCore(), 0)
		c.MemoryMB = max(c.MemoryMB-r.MemoryMB, 0)
		c.Cores = max(c.Cores-r.Cores, 0)
	}
	return &c
}

// AllocatedResources is what a node's allocations take of it, next to
// what it offers: `node status` and GET /v1/node/:id show it.
type AllocatedResources struct {
	Allocated Ask
	Capacity  NodeResources
	// Allocs counts the allocations that take resources (not over on
	// their client, not asked to stop).
	Allocs int
}

// UsesResources reports whether the allocation holds its share of its
// node: until it is asked to stop or is over on its client. A stopped
// one's tasks are killed within their kill timeout; its replacement may
// be placed meanwhile, as Nomad does.
func (a *Allocation) UsesResources() bool { return !a.TerminalStatus() }

// Ask is what the allocation takes of its node (mhzPerCore as in
// GroupAsk); zero when its job or group is not known.
func (a *Allocation) Ask(mhzPerCore int) Ask {
	tg := a.LookupTaskGroup()
	if tg == nil {
		return Ask{}
	}
	return tg.GroupAsk(mhzPerCore)
}

// Shortfall is one resource a node lacks for an ask: its name (memory,
// cpu, cores) and a sentence that names the node, what is allocated of
// what it offers and what the group asks, as in `node "c1": memory
// 900/1024 MiB allocated, the group asks 256`.
type Shortfall struct {
	Resource string
	Text     string
}

// ResourceShortfall lists the node's resources that cannot take the ask
// on top of what is allocated; none when every one can.
func ResourceShortfall(node string, capacity NodeResources, allocated, ask Ask) []Shortfall {
	var out []Shortfall
	if ask.MemoryMB > 0 && allocated.MemoryMB+ask.MemoryMB > capacity.MemoryMB {
		out = append(out, Shortfall{"memory", fmt.Sprintf("node %s: memory %d/%d MiB allocated, the group asks %d", QuoteName(node),
			allocated.MemoryMB, capacity.MemoryMB, ask.MemoryMB)})
	}
	if ask.CPU > 0 && allocated.CPU+ask.CPU > capacity.CPU {
		out = append(out, Shortfall{"cpu", fmt.Sprintf("node %s: cpu %d/%d MHz allocated, the group asks %d", QuoteName(node),
			allocated.CPU, capacity.CPU, ask.CPU)})
	}
	if ask.Cores > 0 && allocated.Cores+ask.Cores > capacity.Cores {
		out = append(out, Shortfall{"cores", fmt.Sprintf("node %s: cores %d/%d allocated, the group asks %d", QuoteName(node),
			allocated.Cores, capacity.Cores, ask.Cores)})
	}
	return out
}

// String is the allocated resources as node status shows them.
func (r *AllocatedResources) String() string {
	parts := []string{
		fmt.Sprintf("CPU %d/%d MHz", r.Allocated.CPU, r.Capacity.CPU),
		fmt.Sprintf("Memory %d/%d MiB", r.Allocated.MemoryMB, r.Capacity.MemoryMB),
		fmt.Sprintf("Cores %d/%d", r.Allocated.Cores, r.Capacity.Cores),
	}
	return strings.Join(parts, ", ")
}

// ValidateMetaKey checks a node meta key (client { meta }): letters,
// digits, '_', '-' and '.', as ${meta.KEY} reads it.
func ValidateMetaKey(k string) error {
	if k == "" {
		return NewError(CodeBadRequest, "a meta key is empty")
	}
	for _, r := range k {
		if !(r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return NewError(CodeBadRequest, "meta key %s holds %q; use letters, digits, '_', '-' and '.'", QuoteName(k), r)
		}
	}
	return nil
}
