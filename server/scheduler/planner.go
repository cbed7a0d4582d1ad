package scheduler

import (
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// Mode says who asked for a pass.
type Mode int

const (
	// Run is a user's run of the job (Job.Register): the plan carries the
	// job itself, so an empty placement still registers it, and failed or
	// completed allocations are replaced.
	Run Mode = iota
	// Auto is the job watcher's pass: the plan carries only the
	// placements, for the job as stored (see PlanApplyRequest), and a
	// failed or completed allocation is not replaced (see liveAllocs).
	Auto
)

// Planner plans jobs' missing allocations against a state store.
type Planner struct {
	clock  Clock
	logger hclog.Logger
}

// NewPlanner returns a planner that stamps claims with clock's time.
func NewPlanner(clock Clock, logger hclog.Logger) *Planner {
	if clock == nil {
		clock = SystemClock
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Planner{clock: clock, logger: logger.Named("scheduler")}
}

// Result is what a pass planned.
type Result struct {
	// Plan is the placement to write through raft: the allocations, the
	// claims they reserve and, in Run mode, the job.
	Plan *structs.PlanApplyRequest
	// Failures says, per group, how many allocations could not be placed
	// and why.
	Failures []*structs.PlacementFailure
	// Checks is how many feasibility checks the pass made (calls of
	// fits): its work, for the log and tests.
	Checks int
	// Groups says what the pass does to each group: placed, stopped,
	// replaced, left running, and how a rolling update stands.
	Groups []*structs.GroupChange
	// Updating: a rolling update is under way (older-version
	// allocations are left to replace); the job watcher re-plans the job
	// as its allocations change, and at NextCheck.
	Updating bool
	// NextCheck is when an allocation placed by the update becomes
	// healthy or reaches its deadline, zero if none is waiting to: the
	// job watcher re-plans the job then, though nothing was written.
	NextCheck time.Time
	// JobVersion is the version the plan's job has once the plan is
	// written (structs.NextJobVersion of the stored job): the stored
	// one's when the spec is the same.
	JobVersion uint64
}

// Plan plans the job's missing allocations on the nodes and volumes of
// st. It writes nothing: the caller writes Result.Plan through raft, and
// holds one lock around the pass and that write, so that two passes never
// plan the same claim.
func (p *Planner) Plan(st *state.StateStore, job *structs.Job, mode Mode) (*Result, error) {
	return p.plan(st, job, mode, nil)
}

// PlanNodes is an Auto pass that places only on the given nodes: what a
// node that became ready (or changed while ready) needs of a system job.
// Its cost is the job's allocations (read, not planned) and the given
// nodes, not every node: the job's allocations elsewhere are seen as they
// are (their updates and stops are decided as in a whole pass), and no
// other node is asked.
func (p *Planner) PlanNodes(st *state.StateStore, job *structs.Job, nodeIDs []string) (*Result, error) {
	return p.plan(st, job, Auto, nodeIDs)
}

func (p *Planner) plan(st *state.StateStore, job *structs.Job, mode Mode, scope []string) (*Result, error) {
	now := p.clock.Now()
	pl := &planning{st: st, job: job, auto: mode == Auto, now: now, scope: scope,
		vols: map[string]*structs.CSIVolume{}, onNode: map[string]map[string]string{},
		usage: map[string]structs.Ask{}, shortfalls: map[string]map[string]string{},
		plan: &structs.PlanApplyRequest{Job: job, Timestamp: now.UnixNano(), WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}}
	failures, err := pl.run()
	if err != nil {
		return nil, err
	}
	p.logger.Trace("planned job", "job_id", job.ID, "namespace", job.Namespace,
		"placed", len(pl.plan.Allocs), "stopped", len(pl.plan.Stops), "checks", pl.checks)
	return &Result{Plan: pl.plan, Failures: failures, Checks: pl.checks, Groups: pl.groups,
		Updating: pl.updating, NextCheck: pl.next, JobVersion: pl.version}, nil
}

// planning holds one pass: the state it reads and the volumes as the plan
// has claimed them so far.
type planning struct {
	st    *state.StateStore
	job   *structs.Job
	scope []string // the only nodes to place on (PlanNodes); nil: all
	nodes []*structs.Node
	// unschedulable are the nodes left out of nodes: not ready, or
	// ineligible (see noNodeReason).
	unschedulable []*structs.Node
	vols          map[string]*structs.CSIVolume    // copies, with the plan's claims added
	onNode        map[string]map[string]string     // node -> volumes (namespace/ID) claimed there, any job's, plan included -> plugin
	usage         map[string]structs.Ask           // node -> what its allocations take, plan included (nodeUsage)
	live          map[string][]*structs.Allocation // the job's allocations that hold their place, by group
	onNodeByGroup map[string]map[string]int        // node -> group -> the job's allocations there, plan included (jobOnNode)
	shortfalls    map[string]map[string]string     // resource -> node ID -> why it is short (fitsResources)
	plan          *structs.PlanApplyRequest
	auto          bool      // Mode Auto
	now           time.Time // the claims' timestamp
	checks        int       // feasibility checks made (calls of fits)

	groups   []*structs.GroupChange
	updating bool      // a rolling update has older allocations left
	next     time.Time // see Result.NextCheck
	version  uint64    // the plan's job version (see Result.JobVersion)
	// stoppedIDs are the job's allocations asked to stop (before or by
	// this plan); heldByStopped the refusals (fits' reasons) that only a
	// claim of one of them makes: a place that waits for a replaced
	// allocation, not a failure.
	stoppedIDs    map[string]bool
	heldByStopped map[string]bool
	// resched are the failed allocations the pass replaces (their
	// reschedule delay is over).
	resched []*structs.Allocation
	// replacedOver are a system job's allocations stopped to be replaced
	// by the plan's version, and over.
	replacedOver []*structs.Allocation
}

// run makes the pass: it fills p.plan and returns why some allocations
// could not be placed, per group.
func (p *planning) run() ([]*structs.PlacementFailure, error) {
	stored, err := p.st.JobByID(nil, p.job.Namespace, p.job.ID)
	if err != nil {
		return nil, err
	}
	p.version, _ = structs.NextJobVersion(stored, p.job)
	if err := p.readNodes(); err != nil {
		return nil, err
	}
	sort.Slice(p.nodes, func(i, j int) bool { return p.nodes[i].ID < p.nodes[j].ID })
	live, stopping, err := p.liveAllocs()
	if err != nil {
		return nil, err
	}
	p.live = live
	if p.auto {
		// Placements only, for the job as it is now (see PlanApplyRequest).
		p.plan.Job, p.plan.JobID, p.plan.JobModifyIndex = nil, p.job.ID, p.job.ModifyIndex
	}
	var failures []*structs.PlacementFailure
	for _, tg := range p.job.TaskGroups {
		f, err := p.placeGroup(tg, live[tg.Name], stopping[tg.Name])
		if err != nil {
			return nil, err
		}
		if f != nil {
			failures = append(failures, f)
		}
	}
	return failures, nil
}

// readNodes splits the nodes to place on (every node, or the scope's)
// into the schedulable ones and the rest.
func (p *planning) readNodes() error {
	add := func(n *structs.Node) {
		if n.Schedulable() {
			p.nodes = append(p.nodes, n)
			return
		}
		p.unschedulable = append(p.unschedulable, n)
	}
	if p.scope != nil {
		for _, id := range p.scope {
			n, err := p.st.NodeByID(nil, id)
			if err != nil {
				return err
			}
			if n != nil {
				add(n)
			}
		}
		return nil
	}
	iter, err := p.st.Nodes(nil)
	if err != nil {
		return err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		add(raw.(*structs.Node))
	}
	return nil
}

// liveAllocs lists, by group, the job's allocations that hold their
// place: those not terminal. In an auto pass, a failed or completed
// allocation holds its place too unless a newer allocation of its name
// was placed since, or it failed and its reschedule delay is over (then it
// is in p.resched); lost and stopped ones leave theirs. stopping lists, by group, the allocations stopped
// whose tasks are not over yet.
func (p *planning) liveAllocs() (live, stopping map[string][]*structs.Allocation, err error) {
	iter, err := p.st.AllocsByJob(nil, p.job.Namespace, p.job.ID)
	if err != nil {
		return nil, nil, err
	}
	newest := map[string]*structs.Allocation{}
	var all []*structs.Allocation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		a := raw.(*structs.Allocation)
		all = append(all, a)
		if n := newest[a.Name]; n == nil || a.CreateIndex > n.CreateIndex {
			newest[a.Name] = a
		}
	}
	live, stopping = map[string][]*structs.Allocation{}, map[string][]*structs.Allocation{}
	p.stoppedIDs, p.heldByStopped = map[string]bool{}, map[string]bool{}
	for _, a := range all {
		if a.DesiredStatus == structs.AllocDesiredStatusStop {
			p.stoppedIDs[a.ID] = true
		}
		holds := !a.TerminalStatus()
		if p.auto && newest[a.Name] == a {
			holds = a.DesiredStatus != structs.AllocDesiredStatusStop
			if holds && p.rescheduleNow(a) {
				holds = false
				p.resched = append(p.resched, a)
			}
		}
		switch {
		case holds:
			live[a.TaskGroup] = append(live[a.TaskGroup], a)
		case a.DesiredStatus == structs.AllocDesiredStatusStop && !a.ClientTerminalStatus():
			stopping[a.TaskGroup] = append(stopping[a.TaskGroup], a)
		case p.job.Type == structs.JobTypeSystem && a.StopReason == structs.AllocStopUpdate && a.ReplacedByVersion == p.version:
			// Over, replaced by this version: its node's new allocation
			// may not be placed yet (see update).
			p.replacedOver = append(p.replacedOver, a)
		}
	}
	return live, stopping, nil
}

// rescheduleNow reports whether failed allocation a is replaced in this
// pass: its group's reschedule policy allows another attempt and the
// delay is over. One whose delay is not over yet has the pass look again
// then (NextCheck).
func (p *planning) rescheduleNow(a *structs.Allocation) bool {
	if p.job.Type == structs.JobTypeSystem {
		return false
	}
	tg := p.job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return false
	}
	at, _, ok := a.NextReschedule(tg.ReschedulePolicy(p.job.Type))
	if !ok {
		return false
	}
	if at.After(p.now) {
		if p.next.IsZero() || at.Before(p.next) {
			p.next = at
		}
		return false
	}
	return true
}
