package command

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

// defaultDrainDeadline is -deadline's default, as Nomad's.
const defaultDrainDeadline = time.Hour

var nodeDrainCommand = &command{
	name:     "node drain",
	synopsis: "Drain a node of its allocations, or cancel a drain",
	help: `[options] <node>

  Drain a node before maintenance: it becomes ineligible for new
  allocations at once, and the leader stops what runs there in an order
  that keeps volumes safe:

    1. service and batch allocations (and any other that uses volumes),
       at most migrate { max_parallel } of a group at a time; each is
       placed again on another node, and its volume claims are released
       (unpublished and unstaged on this node) while its CSI plugin runs;
    2. CSI plugin allocations, once no volume claim on the node is left;
    3. the other system jobs' allocations.

  At the deadline whatever remains is stopped at once. When nothing is
  left the drain is complete; the node stays ineligible until
  "berth node eligibility -enable <node>". The node may be given by a
  unique prefix of its ID.

Drain Options:

  -enable
    Start the drain (or change the one under way). Asks for confirmation
    unless -yes is given.

  -disable
    Cancel the drain. What was stopped stays stopped, and the node stays
    ineligible.

  -deadline=<duration>
    How long the drain may take before what remains is stopped at once.
    Default = 1h. With -enable only.

  -ignore-system
    Leave the allocations of system jobs running (CSI plugins run by
    system jobs among them). With -enable only.

  -yes
    Drain without asking. Required when stdin is not a terminal.

  -monitor
    Follow the drain's steps until it completes. Alone, follows the
    drain under way.
`,
	run: runNodeDrain,
}

var nodeEligibilityCommand = &command{
	name:     "node eligibility",
	synopsis: "Mark a node eligible or ineligible for new allocations",
	help: `[options] <node>

  Mark a node eligible or ineligible for new allocations. What runs there
  keeps running. A draining node cannot be made eligible: cancel its drain
  first (berth node drain -disable). The node may be given by a unique
  prefix of its ID.

Eligibility Options:

  -enable
    Mark the node eligible.

  -disable
    Mark the node ineligible.
`,
	run: runNodeEligibility,
}

// drainFlags are node drain's own flags.
type drainFlags struct {
	enable, disable, ignoreSystem, yes, monitor bool
	deadline                                    time.Duration
	deadlineSet                                 bool
}

func runNodeDrain(ctx context.Context, m *meta, args []string) int {
	var f drainFlags
	fs := m.flagSet()
	fs.BoolVar(&f.enable, "enable", false, "")
	fs.BoolVar(&f.disable, "disable", false, "")
	fs.BoolVar(&f.ignoreSystem, "ignore-system", false, "")
	fs.BoolVar(&f.yes, "yes", false, "")
	fs.BoolVar(&f.monitor, "monitor", false, "")
	fs.DurationVar(&f.deadline, "deadline", defaultDrainDeadline, "")
	pos, status, ok := m.parse(fs, args, 1, 1)
	if !ok {
		return status
	}
	fs.Visit(func(fl *flag.Flag) { f.deadlineSet = f.deadlineSet || fl.Name == "deadline" })
	if msg := f.check(); msg != "" {
		return m.usageError("%s", msg)
	}
	c, id, code := nodeStatus.connect(ctx, m, pos[0])
	if c == nil {
		return code
	}
	node, _, err := c.Nodes().Info(id, nil)
	if err != nil {
		return m.fail("%s", apiError("read node "+id, err))
	}
	switch {
	case f.disable:
		if node.DrainStrategy == nil {
			fmt.Fprintf(m.stdout, "Node %q (%s) is not draining\n", id, node.Name)
			return exitOK
		}
		if _, _, err := c.Nodes().UpdateDrain(id, nil); err != nil {
			return m.fail("%s", apiError("cancel the drain of node "+id, err))
		}
		fmt.Fprintf(m.stdout, "Node %q (%s) drain cancelled; it stays ineligible until \"berth node eligibility -enable %s\"\n",
			id, node.Name, shortID(id, false))
		return exitOK
	case f.enable:
		if code, ok := m.confirmDrain(node, f.yes); !ok {
			return code
		}
		if _, _, err := c.Nodes().UpdateDrain(id, &structs.DrainSpec{Deadline: f.deadline, IgnoreSystemJobs: f.ignoreSystem}); err != nil {
			return m.fail("%s", apiError("drain node "+id, err))
		}
		fmt.Fprintf(m.stdout, "Node %q (%s) drain started: deadline %s\n", id, node.Name, f.deadline)
		if !f.monitor {
			return exitOK
		}
		return m.monitorDrain(ctx, c, id)
	}
	if node.DrainStrategy == nil {
		fmt.Fprintf(m.stdout, "Node %q (%s) is not draining\n", id, node.Name)
		return exitOK
	}
	return m.monitorDrain(ctx, c, id)
}

// check says what is wrong with the flags' combination, or "".
func (f *drainFlags) check() string {
	switch {
	case f.enable && f.disable:
		return "give -enable or -disable, not both"
	case !f.enable && !f.disable && !f.monitor:
		return "give -enable to drain the node, -disable to cancel its drain, or -monitor to follow it"
	case f.disable && f.monitor:
		return "-monitor follows a drain; it cannot be given with -disable"
	case !f.enable && (f.deadlineSet || f.ignoreSystem || f.yes):
		return "-deadline, -ignore-system and -yes go with -enable"
	case f.deadline <= 0:
		return fmt.Sprintf("-deadline must be positive, e.g. 1h or 30m, not %s", f.deadline)
	}
	return ""
}

// confirmDrain asks before a drain unless yes. ok false means do not go
// on, with code the exit status.
func (m *meta) confirmDrain(node *structs.Node, yes bool) (code int, ok bool) {
	if yes {
		return exitOK, true
	}
	if !stdinIsTerminal(m.stdin) {
		return m.fail("draining node %q (%s) stops its allocations; stdin is not a terminal to ask for confirmation, so give -yes", node.ID, node.Name), false
	}
	fmt.Fprintf(m.stdout, "Drain node %q (%s)? Its allocations will be stopped and placed elsewhere. [y/N] ", node.ID, node.Name)
	line, err := bufio.NewReader(m.stdin).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	if answer == "y" || answer == "yes" {
		return exitOK, true
	}
	if err != nil && answer == "" {
		return m.fail("no answer on stdin; give -yes to drain node %q without asking", node.ID), false
	}
	fmt.Fprintln(m.stdout, "Drain not started")
	return exitOK, false
}

// stdinIsTerminal reports whether r is a terminal that a question can be
// asked on (not a pipe, a file or /dev/null). A reader that is not a file
// may say so itself (IsTerminal), as the tests' do.
func stdinIsTerminal(r io.Reader) bool {
	switch f := r.(type) {
	case *os.File:
		_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
		return err == nil
	case interface{ IsTerminal() bool }:
		return f.IsTerminal()
	}
	return false
}

// monitorDrain prints the node's drain events, by blocking queries on the
// node (blockingReads: never spinning on a server that answers at once), until its drain is over (complete or cancelled). It shows the
// events of the latest drain: from when it started (its strategy says,
// or, once it is over, its "drain started" event).
func (m *meta) monitorDrain(ctx context.Context, c *api.Client, id string) int {
	var (
		since time.Time
		seen  = map[string]bool{}
		last  string
	)
	return blockingReads(ctx, pauseRetry, func(index uint64) (uint64, int, bool) {
		node, qm, err := c.Nodes().Info(id, &api.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Minute})
		if err != nil {
			if ctx.Err() != nil {
				return 0, m.fail("stopped following the drain of node %q; it goes on (berth node drain -monitor %s)", id, shortID(id, false)), true
			}
			return 0, m.fail("%s", apiError("follow the drain of node "+id, err)), true
		}
		if since.IsZero() {
			since = drainStart(node)
		}
		for _, e := range node.Events {
			key := e.Timestamp.String() + "\x00" + e.Message
			if e.Subsystem != structs.NodeEventSubsystemDrain || seen[key] || e.Timestamp.Before(since) {
				continue
			}
			seen[key] = true
			last = e.Message
			fmt.Fprintf(m.stdout, "%s: %s\n", formatTime(e.Timestamp), e.Message)
		}
		if node.DrainStrategy == nil {
			if strings.HasPrefix(last, "drain complete") {
				fmt.Fprintf(m.stdout, "Node %q drain complete\n", id)
				return 0, exitOK, true
			}
			fmt.Fprintf(m.stdout, "Node %q is no longer draining\n", id)
			return 0, exitOK, true
		}
		return qm.LastIndex, 0, false
	})
}

// drainStart is when the node's latest drain began: its strategy's
// start, or, once it is over, its last "drain started" event's time.
func drainStart(node *structs.Node) time.Time {
	if d := node.DrainStrategy; d != nil {
		return d.StartedAt
	}
	for i := len(node.Events) - 1; i >= 0; i-- {
		if e := node.Events[i]; e.Subsystem == structs.NodeEventSubsystemDrain && strings.HasPrefix(e.Message, "drain started") {
			return e.Timestamp
		}
	}
	return time.Time{}
}

func runNodeEligibility(ctx context.Context, m *meta, args []string) int {
	var enable, disable bool
	fs := m.flagSet()
	fs.BoolVar(&enable, "enable", false, "")
	fs.BoolVar(&disable, "disable", false, "")
	pos, status, ok := m.parse(fs, args, 1, 1)
	if !ok {
		return status
	}
	if enable == disable {
		return m.usageError("give -enable or -disable, exactly one")
	}
	c, id, code := nodeStatus.connect(ctx, m, pos[0])
	if c == nil {
		return code
	}
	if _, _, err := c.Nodes().UpdateEligibility(id, enable); err != nil {
		return m.fail("%s", apiError("set the eligibility of node "+id, err))
	}
	word := structs.NodeSchedulingIneligible
	if enable {
		word = structs.NodeSchedulingEligible
	}
	fmt.Fprintf(m.stdout, "Node %q scheduling eligibility set: %s for scheduling\n", id, word)
	return exitOK
}

// nodeDrainPairs are the lines node status shows of a node's eligibility
// and drain.
func nodeDrainPairs(n *structs.Node) [][2]string {
	eligibility := n.SchedulingEligibility
	if eligibility == "" {
		eligibility = structs.NodeSchedulingEligible
	}
	drain := "false"
	if d := n.DrainStrategy; d != nil {
		drain = "true, started " + formatTime(d.StartedAt)
		if !d.ForceDeadline.IsZero() {
			drain += ", deadline " + formatTime(d.ForceDeadline)
		}
		if d.IgnoreSystemJobs {
			drain += ", system jobs left running"
		}
	}
	return [][2]string{{"Eligibility", eligibility}, {"Drain", drain}}
}
