package scheduler

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/berth-csi/berth/structs"
)

// fits checks whether allocation idx of the group can run on node n (one
// of the nodes that run the group's drivers: driverNodes): a task that
// needs root only where the client allows root tasks; a privileged docker
// task only where the client allows privileged containers, and one that
// adds capabilities only where the client allows those; the
// claim rules (structs.DecideClaim: modes, a healthy node plugin, the
// volume's topology, the claims held and not yet freed) and room under the
// plugin's max volumes on the node. why is empty when it fits; it
// names the volume, the node and, for a held claim, the alloc and node
// holding it.
func (p *planning) fits(tg *structs.TaskGroup, n *structs.Node, idx int) ([]structs.CSIVolumeClaimRequest, string, error) {
	p.checks++
	if t := tg.RootTaskOn(n); t != nil {
		if t.Driver == structs.DriverDocker {
			who := "a csi_plugin task that names no user"
			if t.User != "" {
				who = "user = " + strconv.Quote(t.User)
			}
			return nil, structs.DockerRootTaskRefusal(t.Name, n.Name, who), nil
		}
		return nil, structs.RootTaskRefusal(t.Name, n.Name), nil
	}
	if t, user, why := tg.UserTaskOn(n); t != nil {
		return nil, structs.TaskUserRefusal(t.Name, user, n.Name, why), nil
	}
	if t := tg.HostNetworkTask(); t != nil {
		if d := n.Drivers[t.Driver]; d == nil || !d.AllowHostNetwork {
			return nil, structs.HostNetworkTaskRefusal(t.Name, t.Driver, n.Name), nil
		}
	}
	if t := tg.PrivilegedTask(); t != nil {
		if d := n.Drivers[t.Driver]; d == nil || !d.AllowPrivileged {
			return nil, structs.PrivilegedTaskRefusal(t.Name, t.Driver, n.Name), nil
		}
	}
	if t, missing := tg.CapsTask(func(driver string) []string {
		if d := n.Drivers[driver]; d != nil {
			return d.AllowCaps
		}
		return nil
	}); t != nil {
		return nil, structs.CapsTaskRefusal(t.Name, t.Driver, n.Name, missing), nil
	}
	if why, err := p.fitsConstraints(tg, n); why != "" || err != nil {
		return nil, why, err
	}
	if why, err := p.fitsResources(tg, n); why != "" || err != nil {
		return nil, why, err
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
			if refusal.Holder != nil && p.stoppedIDs[refusal.Holder.AllocID] {
				p.heldByStopped[refusal.Error()] = true
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
func (p *planning) add(tg *structs.TaskGroup, n *structs.Node, idx int, claims []structs.CSIVolumeClaimRequest) error {
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
	p.placedOn(tg.Name, n.ID)
	if err := p.useResources(tg, n); err != nil {
		return err
	}
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
func (p *planning) nodeVolumes(nodeID string) (map[string]string, error) {
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
func (p *planning) volume(id string) (*structs.CSIVolume, error) {
	if v, ok := p.vols[id]; ok {
		return v, nil
	}
	v, err := p.st.CSIVolumeByID(nil, p.job.Namespace, id)
	if err != nil || v == nil {
		p.vols[id] = nil
		return nil, err
	}
	v = v.Copy() // with its claim maps, for the plan's claims
	p.vols[id] = v
	return v, nil
}

// maxDriverDescriptions is how many distinct health descriptions a
// placement failure quotes per driver; the rest are counted.
const maxDriverDescriptions = 3

// groupDrivers lists, sorted, the drivers other than exec that the
// group's tasks use: exec runs on every node.
func groupDrivers(tg *structs.TaskGroup) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tg.Tasks {
		if t != nil && t.Driver != structs.DriverExec && !seen[t.Driver] {
			seen[t.Driver] = true
			out = append(out, t.Driver)
		}
	}
	sort.Strings(out)
	return out
}

// driverNodes keeps the ready nodes on which every driver the group's
// tasks use is detected and healthy (structs.Node.DriverUsable), and says
// why it left the others out, per driver ("" when it left none out): how
// many nodes lack the driver, and how many have it unhealthy, with their
// health descriptions.
func (p *planning) driverNodes(tg *structs.TaskGroup) ([]*structs.Node, string) {
	drivers := groupDrivers(tg)
	if len(drivers) == 0 {
		return p.nodes, ""
	}
	type missing struct {
		without   int
		unhealthy map[string]int // health description -> nodes
	}
	per := map[string]*missing{}
	var kept []*structs.Node
	for _, n := range p.nodes {
		usable := true
		for _, d := range drivers {
			if n.DriverUsable(d) {
				continue
			}
			usable = false
			m := per[d]
			if m == nil {
				m = &missing{unhealthy: map[string]int{}}
				per[d] = m
			}
			if info := n.Drivers[d]; info == nil || !info.Detected {
				m.without++
			} else {
				m.unhealthy[info.HealthDescription]++
			}
		}
		if usable {
			kept = append(kept, n)
		}
	}
	var why []string
	for _, d := range drivers {
		m := per[d]
		if m == nil {
			continue
		}
		unhealthy := 0
		for _, c := range m.unhealthy {
			unhealthy += c
		}
		var parts []string
		if m.without > 0 {
			parts = append(parts, fmt.Sprintf("%d node%s without %s", m.without, structs.Plural(m.without), d))
		}
		if unhealthy > 0 {
			parts = append(parts, fmt.Sprintf("%d with %s unhealthy%s", unhealthy, d, healthDescriptions(m.unhealthy)))
		}
		head := fmt.Sprintf("no ready node has a healthy %s driver", d)
		if off := m.without + unhealthy; off < len(p.nodes) {
			verb := "have"
			if off == 1 {
				verb = "has"
			}
			head = fmt.Sprintf("%d of %d ready nodes %s no healthy %s driver", off, len(p.nodes), verb, d)
		}
		why = append(why, head+" ("+strings.Join(parts, ", ")+")")
	}
	return kept, strings.Join(why, "; ")
}

// healthDescriptions renders the unhealthy nodes' descriptions: ": why"
// when they share one, ": why (2 nodes); other (1 node)" when they differ,
// the commonest first.
func healthDescriptions(byDesc map[string]int) string {
	descs := make([]string, 0, len(byDesc))
	for d := range byDesc {
		descs = append(descs, d)
	}
	sort.Slice(descs, func(i, j int) bool {
		if byDesc[descs[i]] != byDesc[descs[j]] {
			return byDesc[descs[i]] > byDesc[descs[j]]
		}
		return descs[i] < descs[j]
	})
	if len(descs) == 1 {
		if descs[0] == "" {
			return ""
		}
		return ": " + shortDescription(descs[0])
	}
	var parts []string
	for i, d := range descs {
		if i == maxDriverDescriptions {
			parts = append(parts, fmt.Sprintf("and %d more", len(descs)-i))
			break
		}
		label := shortDescription(d)
		if d == "" {
			label = "no description"
		}
		parts = append(parts, fmt.Sprintf("%s (%d node%s)", label, byDesc[d], structs.Plural(byDesc[d])))
	}
	return ": " + strings.Join(parts, "; ")
}

// maxDescription bounds a health description quoted in a reason: a
// client writes it, and a reason is for people to read.
const maxDescription = 200

func shortDescription(d string) string {
	if len(d) <= maxDescription {
		return d
	}
	cut := maxDescription
	for cut > 0 && !utf8.RuneStart(d[cut]) {
		cut--
	}
	return d[:cut] + "..."
}
