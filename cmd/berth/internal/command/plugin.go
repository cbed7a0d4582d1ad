package command

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

var pluginStatusCommand = &command{
	name:     "plugin status",
	synopsis: "Display status information about CSI plugins",
	help: `[options] [plugin]

  Display the CSI plugins, or one plugin with the health of its controller
  and node instances on each node (the first 100 nodes, by node ID; -json
  shows every one). A plugin may be given by a unique prefix of its ID.

Status Options:

  -verbose
    Show full node and allocation IDs. With a plugin, also list the
    volumes its controller reports, marking those berth does not know.

  -json
    Print the API's JSON.
`,
	run: runPluginStatus,
}

func runPluginStatus(ctx context.Context, m *meta, args []string) int {
	return runStatus(ctx, m, args, pluginStatus)
}

var pluginStatus = statusSpec[*structs.CSIPluginListStub, *structs.CSIPlugin]{
	noun:      "plugin",
	listCmd:   "berth plugin status",
	listPath:  "/v1/plugins",
	listQuery: url.Values{"type": {"csi"}},
	getPath:   "/v1/plugin/csi/",
	list: func(c *api.Client, q *api.QueryOptions) ([]*structs.CSIPluginListStub, *api.QueryMeta, error) {
		return c.CSIPlugins().List(q)
	},
	id: func(p *structs.CSIPluginListStub) string { return p.ID },
	get: func(c *api.Client, id string) (*structs.CSIPlugin, *api.QueryMeta, error) {
		return c.CSIPlugins().Info(id, &api.QueryOptions{PerPage: pluginNodesShown})
	},
	printList: func(m *meta, plugins []*structs.CSIPluginListStub, _ bool) { m.pluginList(plugins) },
	printOne:  (*meta).pluginInfo,

	verboseOne: (*meta).pluginProviderView,
}

// pluginNodesShown is how many nodes' instances `plugin status ID` shows.
const pluginNodesShown = 100

func (m *meta) pluginList(plugins []*structs.CSIPluginListStub) {
	if len(plugins) == 0 {
		m.println("No CSI plugins")
		return
	}
	rows := make([][]string, 0, len(plugins))
	for _, p := range plugins {
		rows = append(rows, []string{p.ID, orNone(p.Provider),
			fmt.Sprintf("%d/%d", p.ControllersHealthy, p.ControllersExpected),
			fmt.Sprintf("%d/%d", p.NodesHealthy, p.NodesExpected)})
	}
	table(m.stdout, []string{"ID", "Provider", "Controllers Healthy/Expected", "Nodes Healthy/Expected"}, rows)
}

func (m *meta) pluginInfo(p *structs.CSIPlugin, verbose bool) {
	kv(m.stdout, [][2]string{
		{"ID", p.ID},
		{"Provider", orNone(p.Provider)},
		{"Version", orNone(p.Version)},
		{"Controllers Required", strconv.FormatBool(p.ControllerRequired)},
		{"Controllers Healthy", strconv.Itoa(p.ControllersHealthy)},
		{"Controllers Expected", strconv.Itoa(p.ControllersExpected)},
		{"Nodes Healthy", strconv.Itoa(p.NodesHealthy)},
		{"Nodes Expected", strconv.Itoa(p.NodesExpected)},
	})
	section(m.stdout, "Controllers")
	m.pluginInstances(p.Controllers, verbose)
	section(m.stdout, "Nodes")
	m.pluginInstances(p.Nodes, verbose)
	if len(p.Controllers) < p.ControllersExpected || len(p.Nodes) < p.NodesExpected {
		m.println(fmt.Sprintf("\nShown: the instances on the first %d nodes by node ID; `berth plugin status -json %s` lists every one.",
			pluginNodesShown, p.ID))
	}

	if len(p.Allocations) > 0 {
		section(m.stdout, "Allocations")
		rows := make([][]string, 0, len(p.Allocations))
		for _, a := range p.Allocations {
			rows = append(rows, []string{shortID(a.ID, verbose), shortID(a.NodeID, verbose),
				a.JobID, a.TaskGroup, a.DesiredStatus, a.ClientStatus})
		}
		table(m.stdout, []string{"ID", "Node ID", "Job ID", "Task Group", "Desired", "Status"}, rows)
	}
}

// pluginInstances lists a plugin's instances by node.
func (m *meta) pluginInstances(infos map[string]*structs.CSIInfo, verbose bool) {
	if len(infos) == 0 {
		m.println("None")
		return
	}
	rows := make([][]string, 0, len(infos))
	for _, n := range sortedKeys(infos) {
		in := infos[n]
		rows = append(rows, []string{shortID(n, verbose), healthy(in.Healthy),
			orNone(in.Provider), orNone(in.ProviderVersion), orNone(shortID(in.AllocID, verbose)), in.HealthDescription})
	}
	table(m.stdout, []string{"Node ID", "Health", "Provider", "Version", "Alloc ID", "Description"}, rows)
}
