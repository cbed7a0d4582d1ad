package api

import "github.com/berth-csi/berth/structs"

// Status reads the cluster's raft status.
type Status struct{ c *Client }

// Status returns the status endpoints.
func (c *Client) Status() *Status { return &Status{c} }

// Leader returns the leader's RPC address, "" when there is no leader.
func (s *Status) Leader() (string, error) {
	var out string
	_, err := s.c.query("/v1/status/leader", nil, &out, nil)
	return out, err
}

// Peers returns the RPC addresses of the raft peers.
func (s *Status) Peers() ([]string, error) {
	var out []string
	_, err := s.c.query("/v1/status/peers", nil, &out, nil)
	return out, err
}

// Agent reads what the answering agent knows of the cluster.
type Agent struct{ c *Client }

// Agent returns the agent endpoints.
func (c *Client) Agent() *Agent { return &Agent{c} }

// Members returns the servers as gossip sees them.
func (a *Agent) Members() ([]*structs.ServerMember, error) {
	var out []*structs.ServerMember
	_, err := a.c.query("/v1/agent/members", nil, &out, nil)
	return out, err
}

// Operator holds the operator endpoints.
type Operator struct{ c *Client }

// Operator returns the operator endpoints.
func (c *Client) Operator() *Operator { return &Operator{c} }

// RaftGetConfiguration returns the raft configuration: every server, its
// address, whether it votes and which one leads.
func (o *Operator) RaftGetConfiguration() (*structs.RaftConfigurationResponse, error) {
	var out structs.RaftConfigurationResponse
	if _, err := o.c.query("/v1/operator/raft/configuration", nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}
