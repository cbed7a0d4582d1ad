package command

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestStatusCommands_Output(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string   // exact, when set
		contains   []string // in stdout
		wantStderr string   // in stderr
	}{
		{
			name: "server members",
			args: []string{"server", "members"},
			wantStdout: `Name      Address    Port  Status  Leader
server-1  10.0.0.11  4748  alive   true
server-2  10.0.0.12  4748  alive   false
`,
		},
		{
			name:     "server members verbose",
			args:     []string{"server", "members", "-verbose"},
			contains: []string{"RPC Address     Tags", "10.0.0.11:4747  dc=dc1, role=berth-server"},
		},
		{
			name: "raft peers",
			args: []string{"operator", "raft", "list-peers"},
			wantStdout: `Node      ID  Address         State     Voter
server-1  s1  10.0.0.11:4747  leader    true
s2        s2  10.0.0.12:4747  follower  true
`,
		},
		{
			name: "node list",
			args: []string{"node", "status"},
			wantStdout: `ID        DC   Name      Status  CSI Controllers  CSI Nodes
8a1c2f3e  dc1  client-1  ready   1                1
8a1c9d00  dc1  client-2  down    0                1
f00dcafe  dc2  client-3  ready   0                0
`,
		},
		{
			name:     "node list verbose shows full IDs",
			args:     []string{"node", "status", "-verbose"},
			contains: []string{node1 + "  dc1"},
		},
		{
			name:     "node by prefix",
			args:     []string{"node", "status", "8a1c2"},
			contains: []string{"ID          = " + node1, "Status      = ready", "Eligibility = eligible\nDrain       = false\n", "CSI Controller Plugins\nPlugin ID  Provider", "hostpath   hostpath.berth.io  1.0.0    healthy  a11c0002  probe ok", "Recent Events", "CSI        Plugin hostpath healthy"},
		},
		{
			name:     "node down shows why",
			args:     []string{"node", "status", node2},
			contains: []string{"Status             = down", "Status Description = missed heartbeat", "CSI Controller Plugins\nNone", "unhealthy", "No events"},
		},
		{
			name:       "node prefix ambiguous",
			args:       []string{"node", "status", "8a1c"},
			wantCode:   1,
			wantStderr: `Error: prefix "8a1c" matches 2 nodes: ` + node1 + ", " + node2 + "; give more of the ID\n",
		},
		{
			name:       "node not found",
			args:       []string{"node", "status", "zzz"},
			wantCode:   1,
			wantStderr: `Error: node "zzz" not found; run "berth node status" to list them`,
		},
		{
			name: "plugin list",
			args: []string{"plugin", "status"},
			wantStdout: `ID         Provider           Controllers Healthy/Expected  Nodes Healthy/Expected
hostpath   hostpath.berth.io  1/1                           1/2
hostpath2  hostpath.berth.io  0/0                           0/0
`,
		},
		{
			name: "plugin exact ID beats longer match",
			args: []string{"plugin", "status", "hostpath"},
			wantStdout: `ID                   = hostpath
Provider             = hostpath.berth.io
Version              = 1.0.0
Controllers Required = true
Controllers Healthy  = 1
Controllers Expected = 1
Nodes Healthy        = 1
Nodes Expected       = 2

Controllers
Node ID   Health   Provider           Version  Alloc ID  Description
8a1c2f3e  healthy  hostpath.berth.io  1.0.0    a11c0002  probe ok

Nodes
Node ID   Health     Provider           Version  Alloc ID  Description
8a1c2f3e  healthy    hostpath.berth.io  1.0.0    a11c0002  probe ok
8a1c9d00  unhealthy  hostpath.berth.io  1.0.0    a11c0002  probe ok

Allocations
ID        Node ID   Job ID  Task Group  Desired  Status
a11c0002  8a1c2f3e  plugin  hostpath    run      running
`,
		},
		{
			name:     "plugin by unique prefix",
			args:     []string{"plugin", "status", "hostpath2"},
			contains: []string{"ID                   = hostpath2", "Controllers\nNone\n\nNodes\nNone\n"},
		},
		{
			name:       "plugin prefix ambiguous",
			args:       []string{"plugin", "status", "host"},
			wantCode:   1,
			wantStderr: `prefix "host" matches 2 plugins: hostpath, hostpath2`,
		},
		{
			name: "volume list",
			args: []string{"volume", "status"},
			wantStdout: `ID     Name   Plugin ID  Schedulable  Access Mode         Readers  Writers
data   data   hostpath   true         single-node-writer  0        1
data2  data2  hostpath   false        <none>              0        0
logs   logs   hostpath   true         <none>              0        0
`,
		},
		{
			name: "volume status",
			args: []string{"volume", "status", "data"},
			wantStdout: `ID                   = data
Name                 = data
Namespace            = default
External ID          = vol-0001
Plugin ID            = hostpath
Provider             = hostpath.berth.io
Version              = 1.0.0
Schedulable          = true
Controllers Healthy  = 1
Controllers Expected = 1
Nodes Healthy        = 1
Nodes Expected       = 2
Access Mode          = single-node-writer
Attachment Mode      = file-system
Mount Options        = fs_type: ext4, flags: [REDACTED]
Capacity             = 1.0 GiB
Topologies           = zone=a

Capabilities
Access Mode         Attachment Mode
single-node-writer  file-system

Claims
Alloc ID  Node ID   Mode   State         Attempts  Last Error
a11c0001  8a1c2f3e  write  taken         0
a11c0002  8a1c9d00  read   unpublishing  3         node unpublish: rpc error: node down
`,
		},
		{
			name:     "volume status verbose",
			args:     []string{"volume", "status", "data", "-verbose"},
			contains: []string{"Parameters           = replicas=3", "Modify Index         = 12", alloc1 + "  " + node1 + "  write"},
		},
		{
			name:     "volume without claims",
			args:     []string{"volume", "status", "logs"},
			contains: []string{"Capabilities\nNone\n", "Claims\nNo claims\n"},
		},
		{
			name:       "volume prefix ambiguous",
			args:       []string{"volume", "status", "dat"},
			wantCode:   1,
			wantStderr: `Error: prefix "dat" matches 2 volumes: data, data2; give more of the ID`,
		},
		{
			name:       "volume not found",
			args:       []string{"volume", "status", "nope"},
			wantCode:   1,
			wantStderr: `Error: volume "nope" not found; run "berth volume status" to list them`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, f.srv.URL, "", tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			mustStdout(t, r, tc.wantStdout, tc.contains)
			if tc.wantStderr != "" {
				must.EqOp(t, "", r.stdout)
			}
		})
	}
}

func TestStatusCommands_JSON_IsTheAPIsJSON(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name     string
		args     []string
		endpoint string
	}{
		{"members", []string{"server", "members", "-json"}, "/v1/agent/members"},
		{"raft", []string{"operator", "raft", "list-peers", "-json"}, "/v1/operator/raft/configuration"},
		{"nodes", []string{"node", "status", "-json"}, "/v1/nodes"},
		{"node", []string{"node", "status", "-json", "f00d"}, "/v1/node/" + node3},
		{"plugins", []string{"plugin", "status", "-json"}, "/v1/plugins?type=csi"},
		{"plugin", []string{"plugin", "status", "hostpath", "-json"}, "/v1/plugin/csi/hostpath"},
		{"volumes", []string{"volume", "status", "-json"}, "/v1/volumes?type=csi"},
		{"volume by prefix, -json last", []string{"volume", "status", "lo", "-json"}, "/v1/volume/csi/logs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, f.srv.URL, "", tc.args...)
			must.EqOp(t, 0, r.code, must.Sprint(r.stderr))

			direct := fetch(t, f.srv.URL+tc.endpoint)
			var want, got any
			must.NoError(t, json.Unmarshal(direct, &want))
			must.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
			must.Eq(t, want, got)
			must.StrContains(t, r.stdout, "\n    ", must.Sprint("indented"))
		})
	}
}

// TestNodeList_ByName: nodes are listed by name, then ID, whatever order
// the API answered in.
func TestNodeList_ByName(t *testing.T) {
	var out strings.Builder
	m := &meta{stdout: &out}
	m.nodeList([]*structs.NodeListStub{
		{ID: "9e41b2f0-0000-0000-0000-000000000000", Name: "c1", Datacenter: "dc1", Status: "ready"},
		{ID: "5c0d3e7a-0000-0000-0000-000000000000", Name: "c2", Datacenter: "dc1", Status: "ready"},
		{ID: "1c0d3e7a-0000-0000-0000-000000000000", Name: "c2", Datacenter: "dc1", Status: "down"},
	}, false)
	must.EqOp(t, `ID        DC   Name  Status  CSI Controllers  CSI Nodes
9e41b2f0  dc1  c1    ready   0                0
1c0d3e7a  dc1  c2    down    0                0
5c0d3e7a  dc1  c2    ready   0                0
`, out.String())
}

// TestPluginInfo_SaysWhenInstancesArePaged: a plugin whose counts exceed
// the instances shown (the first page of nodes) says so and how to see
// them all; one shown whole says nothing of it.
func TestPluginInfo_SaysWhenInstancesArePaged(t *testing.T) {
	page := &structs.CSIPlugin{ID: "hostpath", ControllersExpected: 1, NodesExpected: 250,
		Controllers: map[string]*structs.CSIInfo{node1: {Healthy: true}},
		Nodes:       map[string]*structs.CSIInfo{node1: {Healthy: true}, node2: {Healthy: true}}}
	var out strings.Builder
	(&meta{stdout: &out}).pluginInfo(page, false)
	must.StrContains(t, out.String(), "Shown: the instances on the first 100 nodes by node ID; `berth plugin status -json hostpath` lists every one.")

	page.NodesExpected = 2
	out.Reset()
	(&meta{stdout: &out}).pluginInfo(page, false)
	must.StrNotContains(t, out.String(), "Shown:")
}
