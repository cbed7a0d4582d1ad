package agentproc

import (
	"net"
	"strconv"
)

// Agent is one berth agent process of a harness's cluster: a server or a
// client, bound to its own loopback address.
type Agent struct {
	Name     string
	Addr     string // its loopback address, bound and dialed from
	HTTPPort int
	RPCPort  int // servers only
	SerfPort int // servers only
	DataDir  string
	Server   bool

	Proc *Proc
}

// HTTPAddr is the base URL of the agent's HTTP API.
func (a *Agent) HTTPAddr() string {
	return "http://" + net.JoinHostPort(a.Addr, strconv.Itoa(a.HTTPPort))
}

// RPCAddr is a server's RPC (and raft) address, as /v1/status/leader names it.
func (a *Agent) RPCAddr() string { return net.JoinHostPort(a.Addr, strconv.Itoa(a.RPCPort)) }

// PID is the agent's current process ID.
func (a *Agent) PID() int { return a.Proc.PID() }

// Running reports whether the agent's process runs.
func (a *Agent) Running() bool { return a.Proc.Running() }

// ServerByRPC is the agent of servers whose RPC address is addr, nil if
// none.
func ServerByRPC(servers []*Agent, addr string) *Agent {
	for _, s := range servers {
		if s.RPCAddr() == addr {
			return s
		}
	}
	return nil
}
