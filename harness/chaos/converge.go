package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/harness/chaos/check"
)

// VolumeIDs is the sorted IDs of the volumes server s has in its own
// state (a stale read: no forwarding to the leader).
func (c *Cluster) VolumeIDs(s *Agent) ([]string, error) {
	vols, _, err := c.API(s).CSIVolumes().List(&api.QueryOptions{AllowStale: true})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(vols))
	for _, v := range vols {
		ids = append(ids, v.ID)
	}
	slices.Sort(ids)
	return ids, nil
}

// VolumeValues is the volumes server s has in its own state (a stale
// read), as check.Convergence takes them: volume ID -> value.
func (c *Cluster) VolumeValues(s *Agent) (map[string]check.Value, error) {
	vols, _, err := c.API(s).CSIVolumes().List(&api.QueryOptions{AllowStale: true})
	if err != nil {
		return nil, err
	}
	out := make(map[string]check.Value, len(vols))
	for _, v := range vols {
		out[v.ID] = VolumeValue(v.PluginID, v.ExternalID, v.Name)
	}
	return out, nil
}

// WaitConverged waits until the three servers name the same leader and
// hold the same set of volumes, and returns both. On timeout it fails the
// test with what each server said last.
func (c *Cluster) WaitConverged(timeout time.Duration) (*Agent, []string) {
	c.t.Helper()
	var (
		last   []string
		leader *Agent
		first  []string
	)
	converged := func() bool {
		last, first = last[:0], nil
		leader = c.Leader()
		agreed := leader != nil
		for i, s := range c.Servers {
			ids, err := c.VolumeIDs(s)
			if err != nil {
				agreed = false
				last = append(last, fmt.Sprintf("%s: %v", s.Name, err))
				continue
			}
			last = append(last, fmt.Sprintf("%s: %v", s.Name, ids))
			if i == 0 {
				first = ids
			} else if !slices.Equal(first, ids) {
				agreed = false
			}
		}
		return agreed
	}
	must.Wait(c.t, wait.InitialSuccess(wait.BoolFunc(converged), wait.Timeout(timeout), wait.Gap(200*time.Millisecond)),
		must.Func(func() string {
			return fmt.Sprintf("chaos: the servers did not converge within %s (leader agreed: %v):\n%s", timeout, leader != nil, strings.Join(last, "\n"))
		}))
	return leader, first
}
