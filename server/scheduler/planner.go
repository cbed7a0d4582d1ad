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
}

// Plan plans the job's missing allocations on the nodes and volumes of
// st. It writes nothing: the caller writes Result.Plan through raft, and
// holds one lock around the pass and that write, so that two passes never
// plan the same claim.
func (p *Planner) Plan(st *state.StateStore, job *structs.Job, mode Mode) (*Result, error) {
	pl := &planning{st: st, job: job, auto: mode == Auto, now: p.clock.Now(),
		vols: map[string]*structs.CSIVolume{}, onNode: map[string]map[string]string{},
		plan: &structs.PlanApplyRequest{Job: job, WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}}
	failures, err := pl.run()
	if err != nil {
		return nil, err
	}
	p.logger.Trace("planned job", "job_id", job.ID, "namespace", job.Namespace,
		"placed", len(pl.plan.Allocs), "checks", pl.checks)
	return &Result{Plan: pl.plan, Failures: failures, Checks: pl.checks}, nil
}

// planning holds one pass: the state it reads and the volumes as the plan
// has claimed them so far.
type planning struct {
	st     *state.StateStore
	job    *structs.Job
	nodes  []*structs.Node
	vols   map[string]*structs.CSIVolume // copies, with the plan's claims added
	onNode map[string]map[string]string  // node -> volumes (namespace/ID) claimed there, any job's, plan included -> plugin
	plan   *structs.PlanApplyRequest
	auto   bool      // Mode Auto
	now    time.Time // the claims' timestamp
	checks int       // feasibility checks made (calls of fits)
}

// run makes the pass: it fills p.plan and returns why some allocations
// could not be placed, per group.
func (p *planning) run() ([]*structs.PlacementFailure, error) {
	iter, err := p.st.Nodes(nil)
	if err != nil {
		return nil, err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if n := raw.(*structs.Node); n.Ready() {
			p.nodes = append(p.nodes, n)
		}
	}
	sort.Slice(p.nodes, func(i, j int) bool { return p.nodes[i].ID < p.nodes[j].ID })
	live, err := p.liveAllocs()
	if err != nil {
		return nil, err
	}
	if p.auto {
		// Placements only, for the job as it is now (see PlanApplyRequest).
		p.plan.Job, p.plan.JobID, p.plan.JobModifyIndex = nil, p.job.ID, p.job.ModifyIndex
	}
	var failures []*structs.PlacementFailure
	for _, tg := range p.job.TaskGroups {
		f, err := p.placeGroup(tg, live[tg.Name])
		if err != nil {
			return nil, err
		}
		if f != nil {
			failures = append(failures, f)
		}
	}
	return failures, nil
}

// liveAllocs lists, by group, the job's allocations that hold their
// place: those not terminal. In an auto pass, a failed or completed
// allocation holds its place too (it is not replaced unasked) unless a
// newer allocation of its name was placed since; only lost and stopped
// ones leave theirs.
func (p *planning) liveAllocs() (map[string][]*structs.Allocation, error) {
	iter, err := p.st.AllocsByJob(nil, p.job.Namespace, p.job.ID)
	if err != nil {
		return nil, err
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
	out := map[string][]*structs.Allocation{}
	for _, a := range all {
		holds := !a.TerminalStatus()
		if p.auto && newest[a.Name] == a {
			holds = a.DesiredStatus != structs.AllocDesiredStatusStop
		}
		if holds {
			out[a.TaskGroup] = append(out[a.TaskGroup], a)
		}
	}
	return out, nil
}
