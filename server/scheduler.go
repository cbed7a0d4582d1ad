package server

import (
	"fmt"
	"sort"
	"time"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// The scheduler runs on the leader, in the endpoint that registers a job:
// it places the allocations the job is missing on ready nodes that can
// mount every volume the group asks for, and reserves their claims in the
// same plan, so the placement and its claims land in one raft write.

// planner holds one scheduling pass: the state it reads and the volumes
// as the plan has claimed them so far.
type planner struct {
	st     *state.StateStore
	job    *structs.Job
	nodes  []*structs.Node
	vols   map[string]*structs.CSIVolume // copies, with the plan's claims added
	onNode map[string]map[string]string  // node -> volumes (namespace/ID) claimed there, any job's, plan included -> plugin
	plan   *structs.PlanApplyRequest
	auto   bool      // the jobwatcher's pass: see schedule
	now    time.Time // the claims' timestamp
	checks int       // feasibility checks made (calls of fits), for the log and tests
}

// schedule plans the job's missing allocations. The plan carries the job
// itself, so an empty placement still registers it. With auto (the
// jobwatcher's pass, not a user's run), failed and completed allocations
// are not replaced (see liveAllocs) and the plan carries only the
// placements. The caller holds planMu.
func (s *Server) schedule(job *structs.Job, auto bool) (*structs.PlanApplyRequest, []*structs.PlacementFailure, error) {
	p := s.newPlanner(job, auto)
	failures, err := p.run()
	if err != nil {
		return nil, nil, err
	}
	s.logger.Trace("scheduler: planned job", "job_id", job.ID, "namespace", job.Namespace,
		"placed", len(p.plan.Allocs), "checks", p.checks)
	return p.plan, failures, nil
}

func (s *Server) newPlanner(job *structs.Job, auto bool) *planner {
	return &planner{st: s.State(), job: job, auto: auto, vols: map[string]*structs.CSIVolume{}, onNode: map[string]map[string]string{},
		plan: &structs.PlanApplyRequest{Job: job, WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}, now: time.Now()}
}

// run makes the pass: it fills p.plan and returns why some allocations
// could not be placed, per group.
func (p *planner) run() ([]*structs.PlacementFailure, error) {
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
func (p *planner) liveAllocs() (map[string][]*structs.Allocation, error) {
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

// placeGroup plans the group's missing allocations: up to Count, or one
// per eligible node for a system job. Its work grows with the nodes and
// the allocations it places, never with Count alone: a placement that
// fits on no node ends the group's pass, since the next one would ask the
// same nodes the same question (the same index; nothing was added to the
// plan) and get the same answers.
func (p *planner) placeGroup(tg *structs.TaskGroup, live []*structs.Allocation) (*structs.PlacementFailure, error) {
	idx := newIndexes()
	onNode := map[string]bool{}
	for _, a := range live {
		if i, ok := structs.AllocIndex(a.Name); ok {
			idx.use(i)
		}
		onNode[a.NodeID] = true
	}
	reasons := map[string]map[string]bool{} // reason -> IDs of the nodes that gave it
	// place puts the group's next allocation on the first candidate it
	// fits, and reports whether one did.
	place := func(candidates []*structs.Node) (*structs.Node, error) {
		i := idx.free()
		for _, n := range candidates {
			claims, why, err := p.fits(tg, n, i)
			if err != nil {
				return nil, err
			}
			if why != "" {
				if reasons[why] == nil {
					reasons[why] = map[string]bool{}
				}
				reasons[why][n.ID] = true
				continue
			}
			idx.use(i)
			return n, p.add(tg, n, i, claims)
		}
		return nil, nil
	}
	missing := 0
	if p.job.Type == structs.JobTypeSystem {
		// A system job runs on every node that can run it; it fails only
		// when no node can.
		running := len(live)
		for _, n := range p.nodes {
			if onNode[n.ID] {
				continue
			}
			placed, err := place([]*structs.Node{n})
			if err != nil {
				return nil, err
			}
			if placed != nil {
				running++
			}
		}
		if running == 0 {
			missing = 1
		}
	} else {
		sp := p.newSpread(live)
		for want := tg.Count - len(live); want > 0; want-- {
			placed, err := place(sp.order())
			if err != nil {
				return nil, err
			}
			if placed == nil {
				missing = want
				break
			}
			sp.add(placed)
		}
	}
	if missing == 0 {
		return nil, nil
	}
	f := &structs.PlacementFailure{TaskGroup: tg.Name, Missing: missing}
	if len(p.nodes) == 0 {
		f.Reasons = append(f.Reasons, "no node is ready")
	}
	for why, nodes := range reasons {
		f.Reasons = append(f.Reasons, fmt.Sprintf("%s (%d node%s)", why, len(nodes), plural(len(nodes))))
	}
	sort.Strings(f.Reasons)
	return f, nil
}

// spread orders the ready nodes by how many of the group's allocations
// the state (live) and the plan put on each, fewest first. It is kept up
// to date as the group's allocations are placed, so that ordering costs
// the nodes, not the allocations placed so far.
type spread struct {
	nodes []*structs.Node
	count map[string]int
}

func (p *planner) newSpread(live []*structs.Allocation) *spread {
	sp := &spread{nodes: append([]*structs.Node(nil), p.nodes...), count: map[string]int{}}
	for _, a := range live {
		sp.count[a.NodeID]++
	}
	return sp
}

// order returns the nodes, fewest of the group's allocations first; ties
// keep the order by node ID.
func (sp *spread) order() []*structs.Node {
	sort.SliceStable(sp.nodes, func(i, j int) bool {
		ci, cj := sp.count[sp.nodes[i].ID], sp.count[sp.nodes[j].ID]
		if ci != cj {
			return ci < cj
		}
		return sp.nodes[i].ID < sp.nodes[j].ID
	})
	return sp.nodes
}

func (sp *spread) add(n *structs.Node) { sp.count[n.ID]++ }

// indexes hands out a group's allocation indexes: the smallest index
// that no live or planned allocation uses. Indexes are only ever added
// in a pass, so the search resumes where it stopped.
type indexes struct {
	used map[int]bool
	next int // every index below is used
}

func newIndexes() *indexes { return &indexes{used: map[int]bool{}} }

func (x *indexes) use(i int) { x.used[i] = true }

func (x *indexes) free() int {
	for x.used[x.next] {
		x.next++
	}
	return x.next
}

// fits checks whether allocation idx of the group can run on node n: a
// task that needs root only where the client allows root tasks; the
// claim rules (structs.DecideClaim: modes, a healthy node plugin, the
// volume's topology, the claims held and not yet freed) and room under the
// plugin's max volumes on the node. why is empty when it fits; it
// names the volume, the node and, for a held claim, the alloc and node
// holding it.
func (p *planner) fits(tg *structs.TaskGroup, n *structs.Node, idx int) ([]structs.CSIVolumeClaimRequest, string, error) {
	p.checks++
	if t := tg.RootTask(); t != nil && !n.AllowRootTasks {
		return nil, structs.RootTaskRefusal(t.Name, n.Name), nil
	}
	var claims []structs.CSIVolumeClaimRequest
	aliases := make([]string, 0, len(tg.Volumes))
	for alias := range tg.Volumes {
		aliases = append(aliases, alias)
	}
	sort.Strings(aliases)
	newPerPlugin := map[string]int{}
	for _, alias := range aliases {
		req := tg.Volumes[alias]
		if req.Type != "csi" {
			continue
		}
		source := req.SourceFor(idx)
		vol, err := p.volume(source)
		if err != nil {
			return nil, "", err
		}
		if vol == nil {
			return nil, fmt.Sprintf("volume %q (%s): not registered; create or register it first", alias, source), nil
		}
		claim, refusal := structs.DecideClaim(vol, n, structs.ClaimAsk{NodeID: n.ID, ReadOnly: req.ReadOnly,
			AccessMode: req.AccessMode, AttachmentMode: req.AttachmentMode})
		if refusal != nil {
			if refusal.Reason == structs.ClaimRefusedReadOnly {
				// No node can fix it: the group asks to write a reader-only volume.
				return nil, "", structs.NewError(structs.CodeBadRequest, "group %q, volume %q: %v", tg.Name, alias, refusal)
			}
			return nil, refusal.Error(), nil
		}
		used, err := p.nodeVolumes(n.ID)
		if err != nil {
			return nil, "", err
		}
		key := volumeKey(vol)
		_, there := used[key]
		if max := maxVolumes(n, vol.PluginID); !there && max > 0 &&
			int64(pluginCount(used, vol.PluginID)+newPerPlugin[vol.PluginID]+1) > max {
			return nil, fmt.Sprintf("volume %q: plugin %q is at its max of %d volumes on the node", source, vol.PluginID, max), nil
		}
		claims = append(claims, structs.CSIVolumeClaimRequest{VolumeID: source, NodeID: n.ID, ExternalNodeID: claim.ExternalNodeID,
			Mode: claim.Mode, AccessMode: claim.AccessMode, AttachmentMode: claim.AttachmentMode, State: structs.CSIVolumeClaimStateTaken,
			WriteRequest: structs.WriteRequest{Namespace: p.job.Namespace}})
		if !there {
			newPerPlugin[vol.PluginID]++
		}
	}
	return claims, "", nil
}

// add puts allocation idx of the group on node n in the plan, with its
// claims, and records the claims on the plan's copies of the volumes.
func (p *planner) add(tg *structs.TaskGroup, n *structs.Node, idx int, claims []structs.CSIVolumeClaimRequest) error {
	id := structs.NewUUID()
	alloc := &structs.Allocation{
		ID:            id,
		Namespace:     p.job.Namespace,
		Name:          fmt.Sprintf("%s.%s[%d]", p.job.ID, tg.Name, idx),
		JobID:         p.job.ID,
		TaskGroup:     tg.Name,
		NodeID:        n.ID,
		DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus:  structs.AllocClientStatusPending,
		Job:           p.job,
	}
	p.plan.Allocs = append(p.plan.Allocs, alloc)
	for _, c := range claims {
		c.AllocationID = id
		c.Timestamp = p.now
		p.plan.Claims = append(p.plan.Claims, c)
		vol := p.vols[c.VolumeID]
		claim := c.ToClaim()
		if c.Mode == structs.CSIVolumeClaimWrite {
			vol.WriteClaims[id] = claim
		} else {
			vol.ReadClaims[id] = claim
		}
		vol.AccessMode, vol.AttachmentMode = c.AccessMode, c.AttachmentMode
		used, err := p.nodeVolumes(n.ID)
		if err != nil {
			return err
		}
		used[volumeKey(vol)] = vol.PluginID
	}
	return nil
}

// nodeVolumes is the set of volumes claimed on a node (taken or being
// released, by any job), read once per pass; the plan's claims are added
// as it places them.
func (p *planner) nodeVolumes(nodeID string) (map[string]string, error) {
	if used, ok := p.onNode[nodeID]; ok {
		return used, nil
	}
	iter, err := p.st.CSIVolumesByNodeID(nil, nodeID)
	if err != nil {
		return nil, err
	}
	used := map[string]string{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		v := raw.(*structs.CSIVolume)
		used[volumeKey(v)] = v.PluginID
	}
	p.onNode[nodeID] = used
	return used, nil
}

// maxVolumes is the most volumes the plugin's node instance on n takes; 0
// is no limit.
func maxVolumes(n *structs.Node, pluginID string) int64 {
	if info := n.CSINodePlugins[pluginID]; info != nil && info.NodeInfo != nil {
		return info.NodeInfo.MaxVolumes
	}
	return 0
}

func volumeKey(v *structs.CSIVolume) string { return v.Namespace + "/" + v.ID }

// pluginCount is how many of the volumes are the plugin's.
func pluginCount(used map[string]string, pluginID string) int {
	n := 0
	for _, p := range used {
		if p == pluginID {
			n++
		}
	}
	return n
}

// volume returns the plan's copy of a volume, reading it the first time;
// nil when it does not exist.
func (p *planner) volume(id string) (*structs.CSIVolume, error) {
	if v, ok := p.vols[id]; ok {
		return v, nil
	}
	v, err := p.st.CSIVolumeByID(nil, p.job.Namespace, id)
	if err != nil || v == nil {
		p.vols[id] = nil
		return nil, err
	}
	v = v.Copy()
	if v.ReadClaims == nil {
		v.ReadClaims = map[string]*structs.CSIVolumeClaim{}
	}
	if v.WriteClaims == nil {
		v.WriteClaims = map[string]*structs.CSIVolumeClaim{}
	}
	p.vols[id] = v
	return v, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
