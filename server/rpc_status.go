package server

import (
	"net"
	"sort"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"

	"github.com/berth-csi/berth/structs"
)

// Status answers questions about the cluster itself, from this server's
// own view; nothing here is forwarded.
type Status struct{ srv *Server }

// Leader returns the leader's RPC address, "" while there is none. It is
// open to every caller: clients find the servers with it.
func (st *Status) Leader(_ *structs.GenericRequest, reply *string) error {
	*reply = st.srv.leaderAddr()
	return nil
}

// Peers returns the RPC addresses of the raft voters; open to every
// caller, as Leader.
func (st *Status) Peers(_ *structs.GenericRequest, reply *[]string) error {
	conf, _, err := st.srv.raftConfiguration()
	if err != nil {
		return structs.NewError(structs.CodeUnavailable, "read raft configuration: %v", err)
	}
	peers := make([]string, 0, len(conf.Servers))
	for _, s := range conf.Servers {
		peers = append(peers, string(s.Address))
	}
	sort.Strings(peers)
	*reply = peers
	return nil
}

// Members returns the servers gossip knows, with their status; it needs
// operator or node read.
func (st *Status) Members(args *structs.GenericRequest, reply *structs.ServerMembersResponse) error {
	leader := st.srv.leaderAddr()
	for _, m := range st.srv.servers() {
		reply.Members = append(reply.Members, &structs.ServerMember{
			Name:    m.Name,
			Addr:    m.Member.Addr.String(),
			Port:    m.Member.Port,
			Status:  memberStatus(m.Status),
			Tags:    m.Member.Tags,
			Leader:  leader != "" && leader == m.RPCAddr,
			RPCAddr: m.RPCAddr,
		})
	}
	return nil
}

func memberStatus(s serf.MemberStatus) string {
	switch s {
	case serf.StatusAlive:
		return "alive"
	case serf.StatusLeaving:
		return "leaving"
	case serf.StatusLeft:
		return "left"
	case serf.StatusFailed:
		return "failed"
	}
	return "unknown"
}

// Operator serves cluster operations.
type Operator struct{ srv *Server }

// RaftGetConfiguration lists the raft servers, naming each from gossip.
func (op *Operator) RaftGetConfiguration(args *structs.GenericRequest, reply *structs.RaftConfigurationResponse) error {
	conf, index, err := op.srv.raftConfiguration()
	if err != nil {
		return structs.NewError(structs.CodeUnavailable, "read raft configuration: %v", err)
	}
	names := map[string]string{}
	for _, m := range op.srv.servers() {
		names[m.ID] = m.Name
	}
	_, leaderID := op.srv.raft.LeaderWithID()
	for _, s := range conf.Servers {
		name := names[string(s.ID)]
		if name == "" {
			host, port, _ := net.SplitHostPort(string(s.Address))
			name = "(unknown " + host + ":" + port + ")"
		}
		reply.Servers = append(reply.Servers, &structs.RaftServer{
			ID:      string(s.ID),
			Node:    name,
			Address: string(s.Address),
			Leader:  s.ID == leaderID,
			Voter:   s.Suffrage == raft.Voter,
		})
	}
	sort.Slice(reply.Servers, func(i, j int) bool { return reply.Servers[i].Node < reply.Servers[j].Node })
	reply.Index = index
	return nil
}
