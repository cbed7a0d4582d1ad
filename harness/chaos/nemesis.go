package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"
)

// FaultKind is a kind of fault the nemesis injects.
type FaultKind string

// The faults, one at a time. Every block of len(FaultKinds) rounds runs
// each once, in an order drawn from the seed.
const (
	FaultKillLeader      FaultKind = "kill-leader"      // kill -9, then start again
	FaultKillFollower    FaultKind = "kill-follower"    // kill -9, then start again
	FaultKillClient      FaultKind = "kill-client"      // kill -9 of a client agent (its tasks run on), then start again
	FaultKillPlugin      FaultKind = "kill-plugin"      // kill -9 of a client's berth-hostpath task; its client restarts it
	FaultKillTask        FaultKind = "kill-task"        // kill -9 of a workload task (a writer's or reader's shell); restarted likewise
	FaultPauseLeader     FaultKind = "pause-leader"     // SIGSTOP, then SIGCONT
	FaultPartitionLeader FaultKind = "partition-leader" // cut off from every other agent, then healed
	FaultPartitionSplit  FaultKind = "partition-split"  // one server (the leader or a follower) and one client cut off from the rest
	FaultOneWayLeader    FaultKind = "one-way-leader"   // what the leader sends to the others is dropped; what they send arrives
)

// FaultKinds lists every kind, in a fixed order.
var FaultKinds = []FaultKind{FaultKillLeader, FaultKillFollower, FaultKillClient, FaultKillPlugin, FaultKillTask,
	FaultPauseLeader, FaultPartitionLeader, FaultPartitionSplit, FaultOneWayLeader}

// Fault is one injected fault, as the nemesis logged it.
type Fault struct {
	Round     int
	Kind      FaultKind
	Target    string        // the agent's name (the minority, for a split)
	Injected  time.Time     // when it began
	Hold      time.Duration // how long it lasted, as drawn
	Healed    time.Time     // when it was undone (restart, SIGCONT, rules deleted)
	Recovered time.Time     // when a leader was agreed and every node ready again
}

// Nemesis injects the faults of a run, one at a time, from a seeded source.
type Nemesis struct {
	t     testing.TB
	c     *Cluster
	rng   *rand.Rand
	start time.Time
	plan  []FaultKind // the kinds still to run in the current block
	part  *Partition  // in place, not yet healed
	// splitClient is the client on the minority side of the current split.
	splitClient *Agent
	paused      *Agent // stopped, not yet continued
	Faults      []Fault
}

// NewNemesis returns a nemesis drawing from seed. Whatever a failed test
// left behind, its cleanup heals the partition, continues the paused
// agent and deletes every iptables rule this process added.
func NewNemesis(t testing.TB, c *Cluster, seed uint64) *Nemesis {
	n := &Nemesis{t: t, c: c, rng: rand.New(rand.NewPCG(seed, 0x6e656d65736973)), start: time.Now()}
	t.Cleanup(func() {
		if n.part != nil {
			if err := n.part.Heal(); err != nil {
				t.Errorf("chaos: heal at cleanup: %v", err)
			}
		}
		if n.paused != nil {
			_ = c.Resume(n.paused)
		}
		if k, err := SweepRules(); err != nil {
			t.Errorf("chaos: sweep iptables rules: %v", err)
		} else if k > 0 {
			t.Logf("chaos: deleted %d iptables rules left behind", k)
		}
	})
	return n
}

// Round waits for a healthy cluster, injects the next fault, holds it for
// a random 1-6 s, undoes it and waits for the cluster to recover.
func (n *Nemesis) Round(round int) {
	n.t.Helper()
	c := n.c
	leader := c.WaitLeader(90 * time.Second)
	c.WaitReadyNodes(90 * time.Second)
	if len(n.plan) == 0 {
		n.plan = append([]FaultKind(nil), FaultKinds...)
		n.rng.Shuffle(len(n.plan), func(i, j int) { n.plan[i], n.plan[j] = n.plan[j], n.plan[i] })
	}
	f := Fault{Round: round, Kind: n.plan[0], Hold: time.Duration(1000+n.rng.IntN(5000)) * time.Millisecond}
	n.plan = n.plan[1:]
	var followers []*Agent
	for _, s := range c.Servers {
		if s != leader {
			followers = append(followers, s)
		}
	}
	target := leader
	switch f.Kind {
	case FaultKillFollower:
		target = followers[n.rng.IntN(len(followers))]
	case FaultKillClient, FaultKillPlugin, FaultKillTask:
		target = c.Clients[n.rng.IntN(len(c.Clients))]
	case FaultPartitionSplit:
		if n.rng.IntN(2) == 0 {
			target = followers[n.rng.IntN(len(followers))]
		}
		n.splitClient = c.Clients[n.rng.IntN(len(c.Clients))]
	}
	if f.Kind == FaultKillTask {
		target = n.clientWithTask(target)
	}
	f.Target = target.Name

	f.Injected = time.Now()
	what, err := n.inject(f.Kind, target)
	n.must(f, err)
	n.logf("round %d: %s %s (%s), holding %s", round, f.Kind, target.Name, what, f.Hold)
	time.Sleep(f.Hold)
	if target.Server {
		n.logf("round %d: before undoing it, the others name as leader: %s", round, n.othersLeader(target))
	}
	f.Healed = time.Now()
	n.must(f, n.heal(f.Kind, target))
	n.logf("round %d: %s %s undone (pid %d)", round, f.Kind, target.Name, target.PID())

	c.WaitLeader(90 * time.Second)
	c.WaitReadyNodes(90 * time.Second)
	c.WaitPluginHealthy(90 * time.Second)
	f.Recovered = time.Now()
	n.Faults = append(n.Faults, f)
	n.logf("round %d: recovered %s after the fault was undone", round, f.Recovered.Sub(f.Healed).Round(time.Millisecond))
	time.Sleep(time.Duration(500+n.rng.IntN(1500)) * time.Millisecond) // let the workload run on a healthy cluster
}

// inject injects the fault on a and says what it did, for the log.
func (n *Nemesis) inject(kind FaultKind, a *Agent) (string, error) {
	pid := fmt.Sprintf("pid %d", a.PID())
	var (
		p   *Partition
		err error
	)
	switch kind {
	case FaultKillLeader, FaultKillFollower, FaultKillClient:
		return pid, n.c.Kill(a)
	case FaultKillPlugin:
		return n.killPID(a, "plugin", n.c.PluginPID(a))
	case FaultKillTask:
		pids := n.c.WorkloadTaskPIDs(a)
		if len(pids) == 0 {
			return "no workload task running", nil
		}
		return n.killPID(a, "task", pids[n.rng.IntN(len(pids))])
	case FaultPauseLeader:
		if err := n.c.Pause(a); err != nil {
			return pid, err
		}
		n.paused = a
		return pid, nil
	case FaultPartitionLeader:
		p, err = n.c.Isolate(a)
	case FaultPartitionSplit:
		p, err = n.c.Split([]*Agent{a, n.splitClient})
		pid = "with client " + n.splitClient.Name
	case FaultOneWayLeader:
		p, err = n.c.DropFrom(a)
	default:
		return "", fmt.Errorf("chaos: unknown fault %q", kind)
	}
	n.part = p
	return pid, err
}

// killPID kills the process pid of client a's tasks with SIGKILL.
func (n *Nemesis) killPID(a *Agent, what string, pid int) (string, error) {
	if pid == 0 {
		return "", fmt.Errorf("chaos: no %s process runs on client %s", what, a.Name)
	}
	return fmt.Sprintf("%s pid %d", what, pid), syscall.Kill(pid, syscall.SIGKILL)
}

// clientWithTask is a client that runs a workload task, a first; it waits
// up to 10 s for one, and returns a when none does.
func (n *Nemesis) clientWithTask(a *Agent) *Agent {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, cl := range append([]*Agent{a}, n.c.Clients...) {
			if len(n.c.WorkloadTaskPIDs(cl)) > 0 {
				return cl
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return a
}

// heal undoes the fault: a killed agent is started again, a paused one
// continued, a partition's rules deleted. A killed task or plugin is left
// to its client, which restarts it.
func (n *Nemesis) heal(kind FaultKind, a *Agent) error {
	switch kind {
	case FaultKillLeader, FaultKillFollower, FaultKillClient:
		return n.c.Restart(a)
	case FaultKillPlugin, FaultKillTask:
		return nil
	case FaultPauseLeader:
		n.paused = nil
		return n.c.Resume(a)
	case FaultPartitionLeader, FaultPartitionSplit, FaultOneWayLeader:
		p := n.part
		n.part = nil
		return p.Heal()
	}
	return fmt.Errorf("chaos: unknown fault %q", kind)
}

// othersLeader is what the servers other than a name as leader, for the
// log: whether the fault made them elect a new one.
func (n *Nemesis) othersLeader(a *Agent) string {
	var says []string
	for _, s := range n.c.Servers {
		if s == a {
			continue
		}
		l, err := n.c.API(s).Status().Leader()
		switch {
		case err != nil:
			says = append(says, s.Name+": "+err.Error())
		case n.c.ServerByRPC(l) != nil:
			says = append(says, s.Name+": "+n.c.ServerByRPC(l).Name)
		default:
			says = append(says, s.Name+": none")
		}
	}
	return strings.Join(says, ", ")
}

func (n *Nemesis) must(f Fault, err error) {
	if err != nil {
		n.t.Fatalf("chaos: round %d: %s of %s: %v", f.Round, f.Kind, f.Target, err)
	}
}

// logf logs with the time since the nemesis started and the wall clock.
func (n *Nemesis) logf(format string, args ...any) {
	now := time.Now()
	n.t.Logf("[+%s %s] %s", now.Sub(n.start).Round(time.Millisecond), now.Format("15:04:05.000"), fmt.Sprintf(format, args...))
}
