package command

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

var volumeStatusCommand = &command{
	name:     "volume status",
	synopsis: "Display status information about CSI volumes",
	help: `[options] [volume]

  Display the CSI volumes, or one volume with its capabilities, claims and
  usage (used bytes, inodes and condition, as the node plugin of each claim
  last reported them). A volume may be given by a unique prefix of its ID.

Status Options:

  -verbose
    Show full node and allocation IDs, and the volume's parameters,
    context and requested capacity, and the timeline of each claim (taken,
    being released, or among the last 4 freed): each step with the gap
    from the step before. Also show the provider view: how the
    plugin's controller reports the volume (capacity, the nodes it is
    published to, its condition), or, without a volume, every volume each
    plugin reports, marking those berth does not know.

  -json
    Print the API's JSON.
`,
	run: runVolumeStatus,
}

func runVolumeStatus(ctx context.Context, m *meta, args []string) int {
	return runStatus(ctx, m, args, volumeStatus)
}

// volumeStatus also resolves the volume for other volume commands.
var volumeStatus = statusSpec[*structs.CSIVolumeListStub, *structs.CSIVolume]{
	noun:      "volume",
	listCmd:   "berth volume status",
	listPath:  "/v1/volumes",
	listQuery: url.Values{"type": {"csi"}},
	getPath:   "/v1/volume/csi/",
	list: func(c *api.Client, q *api.QueryOptions) ([]*structs.CSIVolumeListStub, *api.QueryMeta, error) {
		return c.CSIVolumes().List(q)
	},
	id: func(v *structs.CSIVolumeListStub) string { return v.ID },
	get: func(c *api.Client, id string) (*structs.CSIVolume, *api.QueryMeta, error) {
		return c.CSIVolumes().Info(id, nil)
	},
	printList: func(m *meta, vols []*structs.CSIVolumeListStub, _ bool) { m.volumeList(vols) },
	printOne:  (*meta).volumeInfo,

	verboseList: (*meta).volumeListProviderViews,
	verboseOne:  (*meta).volumeProviderView,
}

func (m *meta) volumeList(vols []*structs.CSIVolumeListStub) {
	if len(vols) == 0 {
		m.println("No CSI volumes")
		return
	}
	rows := make([][]string, 0, len(vols))
	for _, v := range vols {
		rows = append(rows, []string{v.ID, v.Name, v.PluginID, strconv.FormatBool(v.Schedulable),
			orNone(string(v.AccessMode)), strconv.Itoa(v.CurrentReaders), strconv.Itoa(v.CurrentWriters)})
	}
	table(m.stdout, []string{"ID", "Name", "Plugin ID", "Schedulable", "Access Mode", "Readers", "Writers"}, rows)
}

func (m *meta) volumeInfo(v *structs.CSIVolume, verbose bool) {
	pairs := [][2]string{
		{"ID", v.ID},
		{"Name", v.Name},
		{"Namespace", orNone(v.Namespace)},
		{"External ID", orNone(v.ExternalID)},
		{"Plugin ID", v.PluginID},
		{"Provider", orNone(v.Provider)},
		{"Version", orNone(v.ProviderVersion)},
		{"Schedulable", strconv.FormatBool(v.Schedulable)},
		{"Controllers Healthy", strconv.Itoa(v.ControllersHealthy)},
		{"Controllers Expected", strconv.Itoa(v.ControllersExpected)},
		{"Nodes Healthy", strconv.Itoa(v.NodesHealthy)},
		{"Nodes Expected", strconv.Itoa(v.NodesExpected)},
		{"Access Mode", orNone(string(v.AccessMode))},
		{"Attachment Mode", orNone(string(v.AttachmentMode))},
		{"Mount Options", mountOptions(v.MountOptions)},
		{"Capacity", humanBytes(v.Capacity)},
		{"Topologies", topologies(v.Topologies)},
	}
	if len(v.PreferredTopologies) > 0 {
		pairs = append(pairs, [2]string{"Preferred Topologies", topologies(v.PreferredTopologies)})
	}
	if verbose {
		pairs = append(pairs,
			[2]string{"Requested Capacity", capacityRange(v.RequestedCapacityMin, v.RequestedCapacityMax)},
			[2]string{"Snapshot ID", orNone(v.SnapshotID)},
			[2]string{"Clone ID", orNone(v.CloneID)},
			[2]string{"Parameters", formatMap(v.Parameters)},
			[2]string{"Context", formatMap(v.Context)},
			[2]string{"Create Index", strconv.FormatUint(v.CreateIndex, 10)},
			[2]string{"Modify Index", strconv.FormatUint(v.ModifyIndex, 10)},
		)
	}
	kv(m.stdout, pairs)

	section(m.stdout, "Capabilities")
	caps := make([][]string, 0, len(v.RequestedCapabilities))
	for _, c := range v.RequestedCapabilities {
		caps = append(caps, []string{string(c.AccessMode), string(c.AttachmentMode)})
	}
	if len(caps) == 0 {
		m.println("None")
	} else {
		table(m.stdout, []string{"Access Mode", "Attachment Mode"}, caps)
	}

	section(m.stdout, "Claims")
	m.claims(v, verbose)
	m.volumeUsage(v, verbose)
	if verbose {
		m.claimTimelines(v)
	}
}

// claimTimelines shows the timeline of each claim, taken, being released
// or among the last freed.
func (m *meta) claimTimelines(v *structs.CSIVolume) {
	claims := append(v.SortedClaims(), v.FreedClaims...)
	for _, c := range claims {
		if c == nil {
			continue
		}
		section(m.stdout, fmt.Sprintf("Timeline of the claim of alloc %s (%s)", c.AllocID, c.State))
		if len(c.Timeline) == 0 {
			m.println("No steps recorded")
			continue
		}
		timelineTable(m.stdout, ownSteps(c.Timeline))
	}
}

// claims lists the volume's claims: taken ones, then those being released.
func (m *meta) claims(v *structs.CSIVolume, verbose bool) {
	type row struct {
		claim *structs.CSIVolumeClaim
		alloc string
	}
	var rows []row
	for _, group := range []map[string]*structs.CSIVolumeClaim{v.WriteClaims, v.ReadClaims, v.PastClaims} {
		for _, id := range sortedKeys(group) {
			rows = append(rows, row{group[id], id})
		}
	}
	if len(rows) == 0 {
		m.println("No claims")
		return
	}
	withErrors := false
	for _, r := range rows {
		if r.claim != nil && r.claim.LastError != "" {
			withErrors = true
		}
	}
	header := []string{"Alloc ID", "Node ID", "Mode", "State"}
	if withErrors {
		header = append(header, "Attempts", "Last Error")
	}
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		c := r.claim
		if c == nil {
			c = &structs.CSIVolumeClaim{}
		}
		line := []string{shortID(r.alloc, verbose), shortID(c.NodeID, verbose), string(c.Mode), c.State.String()}
		if withErrors {
			line = append(line, strconv.Itoa(c.Attempts), oneLine(c.LastError))
		}
		out = append(out, line)
	}
	table(m.stdout, header, out)
}

// mountOptions shows the fs type and the (already redacted) flags.
func mountOptions(o *structs.CSIMountOptions) string {
	if o == nil || o.FSType == "" && len(o.MountFlags) == 0 {
		return "<none>"
	}
	s := "fs_type: " + orNone(o.FSType)
	if len(o.MountFlags) > 0 {
		s += ", flags: " + strings.Join(o.MountFlags, " ")
	}
	return s
}

func topologies(ts []*structs.CSITopology) string {
	if len(ts) == 0 {
		return "<none>"
	}
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		if t != nil {
			parts = append(parts, formatMap(t.Segments))
		}
	}
	return strings.Join(parts, "; ")
}

// capacityRange shows the requested capacity bounds.
func capacityRange(lo, hi int64) string {
	switch {
	case lo <= 0 && hi <= 0:
		return "<none>"
	case hi <= 0:
		return "at least " + humanBytes(lo)
	case lo <= 0:
		return "at most " + humanBytes(hi)
	}
	return humanBytes(lo) + " to " + humanBytes(hi)
}

// oneLine keeps a table row on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
