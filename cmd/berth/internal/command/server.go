package command

import (
	"context"
	"sort"
	"strconv"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

var serverMembersCommand = &command{
	name:     "server members",
	synopsis: "Display the servers and their gossip status",
	help: `[options]

  Display the servers the answering agent knows through gossip, with their
  status and which one leads.

Members Options:

  -verbose
    Also show each server's RPC address and gossip tags.

  -json
    Print the API's JSON.
`,
	run: runServerMembers,
}

func runServerMembers(ctx context.Context, m *meta, args []string) int {
	return runRead(ctx, m, args, readSpec[[]*structs.ServerMember]{
		verbose:  true,
		endpoint: "/v1/agent/members",
		doing:    "list servers",
		get:      func(c *api.Client) ([]*structs.ServerMember, error) { return c.Agent().Members() },
		print:    (*meta).serverMembers,
	})
}

func (m *meta) serverMembers(members []*structs.ServerMember, verbose bool) {
	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	header := []string{"Name", "Address", "Port", "Status", "Leader"}
	if verbose {
		header = append(header, "RPC Address", "Tags")
	}
	rows := make([][]string, 0, len(members))
	for _, s := range members {
		r := []string{s.Name, s.Addr, strconv.Itoa(int(s.Port)), s.Status, strconv.FormatBool(s.Leader)}
		if verbose {
			r = append(r, orNone(s.RPCAddr), formatMap(s.Tags))
		}
		rows = append(rows, r)
	}
	table(m.stdout, header, rows)
}

var operatorRaftListPeersCommand = &command{
	name:     "operator raft list-peers",
	synopsis: "Display the raft peer configuration",
	help: `[options]

  Display the servers in the raft configuration: their IDs, addresses,
  which one leads and whether they vote.

List Peers Options:

  -json
    Print the API's JSON.
`,
	run: runRaftListPeers,
}

func runRaftListPeers(ctx context.Context, m *meta, args []string) int {
	return runRead(ctx, m, args, readSpec[*structs.RaftConfigurationResponse]{
		endpoint: "/v1/operator/raft/configuration",
		doing:    "read the raft configuration",
		get: func(c *api.Client) (*structs.RaftConfigurationResponse, error) {
			return c.Operator().RaftGetConfiguration()
		},
		print: (*meta).raftPeers,
	})
}

func (m *meta) raftPeers(conf *structs.RaftConfigurationResponse, _ bool) {
	rows := make([][]string, 0, len(conf.Servers))
	for _, s := range conf.Servers {
		state := "follower"
		if s.Leader {
			state = "leader"
		}
		node := s.Node
		if node == "" {
			node = s.ID
		}
		rows = append(rows, []string{node, s.ID, s.Address, state, strconv.FormatBool(s.Voter)})
	}
	table(m.stdout, []string{"Node", "ID", "Address", "State", "Voter"}, rows)
}
