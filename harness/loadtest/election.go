package loadtest

import (
	"fmt"
	"time"

	"github.com/berth-csi/berth/api"
)

// electionPoll is how often KillLeader asks the servers for the leader.
const electionPoll = 5 * time.Millisecond

// KillLeader kills the leader with SIGKILL and returns the time from the
// kill until both other servers name the same new leader (through
// /v1/status/leader). Then it starts the killed server again and waits
// until all three agree on a leader and the restarted one has caught up
// with the state the new leader had, so that the next trial starts from
// a whole cluster.
func (c *Cluster) KillLeader(timeout time.Duration) (elected time.Duration, killed, next *Agent, err error) {
	killed = c.WaitLeader(timeout)
	var rest []*Agent
	for _, s := range c.Servers {
		if s != killed {
			rest = append(rest, s)
		}
	}
	start := time.Now()
	if err := killed.Proc.Kill(); err != nil {
		return 0, killed, nil, err
	}
	deadline := start.Add(timeout)
	for {
		l := c.agreedLeader(rest)
		if l != "" && l != killed.RPCAddr() {
			elected, next = time.Since(start), c.ServerByRPC(l)
			break
		}
		if time.Now().After(deadline) {
			return 0, killed, nil, fmt.Errorf("loadtest: no new leader %s after the leader %s was killed", timeout, killed.Name)
		}
		time.Sleep(electionPoll)
	}
	if next == nil {
		return 0, killed, nil, fmt.Errorf("loadtest: the servers name an unknown leader after %s was killed", killed.Name)
	}

	// The state the restarted server must reach: the new leader's, read
	// once it leads.
	_, qm, err := c.API(next).CSIVolumes().List(&api.QueryOptions{Prefix: claimSource})
	if err != nil {
		return 0, killed, next, fmt.Errorf("loadtest: read the new leader's index: %w", err)
	}
	if err := killed.Proc.Start(); err != nil {
		return 0, killed, next, err
	}
	c.waitUntil(timeout, fmt.Sprintf("%s restarted, following a leader, at index %d", killed.Name, qm.LastIndex), func() bool {
		if c.Leader() == nil {
			return false
		}
		_, got, err := c.probe(killed).CSIVolumes().List(&api.QueryOptions{Prefix: claimSource, AllowStale: true})
		return err == nil && got.LastIndex >= qm.LastIndex
	})
	return elected, killed, next, nil
}
