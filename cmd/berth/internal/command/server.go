package command

import (
	"context"
	"encoding/json"
	"net/url"
	"sort"
	"strconv"

	"github.com/berth-csi/berth/api"
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
	fs := m.flagSet()
	verbose := fs.Bool("verbose", false, "")
	asJSON := fs.Bool("json", false, "")
	if _, status, ok := m.parse(fs, args, 0, 0); !ok {
		return status
	}
	c, err := m.client(ctx)
	if err != nil {
		return m.fail("%v", err)
	}
	if *asJSON {
		raw, err := rawGet(c, "/v1/agent/members", nil)
		if err != nil {
			return m.fail("%s", apiError("list servers", err))
		}
		return m.printRaw(raw)
	}
	members, err := c.Agent().Members()
	if err != nil {
		return m.fail("%s", apiError("list servers", err))
	}
	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	header := []string{"Name", "Address", "Port", "Status", "Leader"}
	if *verbose {
		header = append(header, "RPC Address", "Tags")
	}
	rows := make([][]string, 0, len(members))
	for _, s := range members {
		r := []string{s.Name, s.Addr, strconv.Itoa(int(s.Port)), s.Status, strconv.FormatBool(s.Leader)}
		if *verbose {
			r = append(r, orNone(s.RPCAddr), formatMap(s.Tags))
		}
		rows = append(rows, r)
	}
	table(m.stdout, header, rows)
	return exitOK
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
	fs := m.flagSet()
	asJSON := fs.Bool("json", false, "")
	if _, status, ok := m.parse(fs, args, 0, 0); !ok {
		return status
	}
	c, err := m.client(ctx)
	if err != nil {
		return m.fail("%v", err)
	}
	if *asJSON {
		raw, err := rawGet(c, "/v1/operator/raft/configuration", nil)
		if err != nil {
			return m.fail("%s", apiError("read the raft configuration", err))
		}
		return m.printRaw(raw)
	}
	conf, err := c.Operator().RaftGetConfiguration()
	if err != nil {
		return m.fail("%s", apiError("read the raft configuration", err))
	}
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
	return exitOK
}

// printRaw prints the API's JSON for -json.
func (m *meta) printRaw(raw json.RawMessage) int {
	if err := printJSON(m.stdout, raw); err != nil {
		return m.fail("%v", err)
	}
	return exitOK
}

// rawGet reads an endpoint's JSON as it is, for -json. IDs in endpoint
// must be escaped with url.PathEscape.
func rawGet(c *api.Client, endpoint string, params url.Values) (json.RawMessage, error) {
	var raw json.RawMessage
	_, err := c.Raw().Query(endpoint, params, &raw, nil)
	return raw, err
}
