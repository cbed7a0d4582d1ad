package command

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

var nodeStatusCommand = &command{
	name:     "node status",
	synopsis: "Display status information about client nodes",
	help: `[options] [node]

  Display the client nodes, or one node with its task drivers, CSI plugins
  and recent events. A node may be given by a unique prefix of its ID.

Status Options:

  -verbose
    Show full IDs.

  -json
    Print the API's JSON.
`,
	run: runNodeStatus,
}

func runNodeStatus(ctx context.Context, m *meta, args []string) int {
	return runStatus(ctx, m, args, nodeStatus)
}

var nodeStatus = statusSpec[*structs.NodeListStub, *structs.Node]{
	noun:     "node",
	listCmd:  "berth node status",
	listPath: "/v1/nodes",
	getPath:  "/v1/node/",
	list: func(c *api.Client, q *api.QueryOptions) ([]*structs.NodeListStub, *api.QueryMeta, error) {
		return c.Nodes().List(q)
	},
	id: func(n *structs.NodeListStub) string { return n.ID },
	get: func(c *api.Client, id string) (*structs.Node, *api.QueryMeta, error) {
		return c.Nodes().Info(id, nil)
	},
	printList: (*meta).nodeList,
	printOne:  (*meta).nodeInfo,
}

func (m *meta) nodeList(nodes []*structs.NodeListStub, verbose bool) {
	if len(nodes) == 0 {
		m.println("No nodes registered")
		return
	}
	// By name, as people know their nodes, then by ID.
	nodes = slices.Clone(nodes)
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodes[i].Name != nodes[j].Name {
			return nodes[i].Name < nodes[j].Name
		}
		return nodes[i].ID < nodes[j].ID
	})
	rows := make([][]string, 0, len(nodes))
	for _, n := range nodes {
		rows = append(rows, []string{shortID(n.ID, verbose), n.Datacenter, n.Name, n.Status,
			strconv.Itoa(len(n.CSIControllerPlugins)), strconv.Itoa(len(n.CSINodePlugins))})
	}
	table(m.stdout, []string{"ID", "DC", "Name", "Status", "CSI Controllers", "CSI Nodes"}, rows)
}

func (m *meta) nodeInfo(n *structs.Node, verbose bool) {
	pairs := [][2]string{
		{"ID", n.ID},
		{"Name", n.Name},
		{"Datacenter", orNone(n.Datacenter)},
		{"Status", n.Status},
	}
	if n.StatusDescription != "" {
		pairs = append(pairs, [2]string{"Status Description", n.StatusDescription})
	}
	pairs = append(pairs, nodeDrainPairs(n)...)
	pairs = append(pairs, [2]string{"HTTP Addr", orNone(n.HTTPAddr)})
	kv(m.stdout, pairs)

	section(m.stdout, "Allocated Resources")
	m.allocated(n)
	if len(n.Meta) > 0 {
		section(m.stdout, "Meta")
		m.stringMap(n.Meta)
	}
	if verbose && len(n.Attributes) > 0 {
		section(m.stdout, "Attributes")
		m.stringMap(n.Attributes)
	}
	section(m.stdout, "Drivers")
	m.drivers(n.Drivers)
	section(m.stdout, "CSI Controller Plugins")
	m.csiInstances(n.CSIControllerPlugins, verbose)
	section(m.stdout, "CSI Node Plugins")
	m.csiInstances(n.CSINodePlugins, verbose)

	section(m.stdout, "Recent Events")
	if len(n.Events) == 0 {
		m.println("No events")
		return
	}
	events := n.Events
	if !verbose && len(events) > 10 {
		events = events[len(events)-10:]
	}
	rows := make([][]string, 0, len(events))
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		rows = append(rows, []string{formatTime(e.Timestamp), e.Subsystem, e.Message})
	}
	table(m.stdout, []string{"Time", "Subsystem", "Message"}, rows)
}

// allocated shows what the node's allocations take of what it offers,
// and what its client reserves.
func (m *meta) allocated(n *structs.Node) {
	a := n.Allocated
	if a == nil {
		m.println("Not reported (a client from before resources were reported: the scheduler does not limit it)")
		return
	}
	row := func(name string, used, offered, total int, unit string) []string {
		f := func(format string, args ...any) string { return strings.TrimSpace(fmt.Sprintf(format, args...)) }
		return []string{name, f("%d/%d %s", used, offered, unit), f("%d %s", total-offered, unit), f("%d %s", total, unit)}
	}
	table(m.stdout, []string{"Resource", "Allocated", "Reserved", "Node"}, [][]string{
		row("CPU", a.Allocated.CPU, a.Capacity.CPU, n.Resources.CPU, "MHz"),
		row("Memory", a.Allocated.MemoryMB, a.Capacity.MemoryMB, n.Resources.MemoryMB, "MiB"),
		row("Cores", a.Allocated.Cores, a.Capacity.Cores, n.Resources.Cores, ""),
	})
}

// stringMap lists a map's keys and values, sorted by key.
func (m *meta) stringMap(values map[string]string) {
	pairs := make([][2]string, 0, len(values))
	for _, k := range sortedKeys(values) {
		pairs = append(pairs, [2]string{k, values[k]})
	}
	kv(m.stdout, pairs)
}

// csiInstances lists a node's plugin instances by plugin ID.
func (m *meta) csiInstances(infos map[string]*structs.CSIInfo, verbose bool) {
	if len(infos) == 0 {
		m.println("None")
		return
	}
	rows := make([][]string, 0, len(infos))
	for _, id := range sortedKeys(infos) {
		in := infos[id]
		rows = append(rows, []string{id, orNone(in.Provider), orNone(in.ProviderVersion),
			healthy(in.Healthy), orNone(shortID(in.AllocID, verbose)), in.HealthDescription})
	}
	table(m.stdout, []string{"Plugin ID", "Provider", "Version", "Health", "Alloc ID", "Description"}, rows)
}

// drivers lists a node's task drivers by name. A node that reports none
// is a client from before drivers were reported: it runs exec only.
func (m *meta) drivers(infos map[string]*structs.DriverInfo) {
	if len(infos) == 0 {
		m.println("None reported (the client runs exec only)")
		return
	}
	rows := make([][]string, 0, len(infos))
	for _, name := range sortedKeys(infos) {
		d := infos[name]
		health := healthy(d.Healthy)
		if !d.Detected {
			health = "undetected"
		}
		rows = append(rows, []string{name, yesNo(d.Detected), health, yesNo(d.AllowPrivileged), yesNo(d.AllowHostNetwork),
			formatTime(d.UpdateTime), d.HealthDescription})
	}
	table(m.stdout, []string{"Driver", "Detected", "Health", "Privileged", "Host Network", "Updated", "Description"}, rows)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (m *meta) println(s string) { _, _ = m.stdout.Write([]byte(s + "\n")) }
