package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/berth-csi/berth/structs"
)

var eventStreamCommand = &command{
	name:     "event stream",
	synopsis: "Print the cluster's changes as they happen",
	help: `[options]

  Print the events of the cluster's changes as the servers apply them:
  nodes, jobs, allocations, CSI volumes with each step of their claims
  (taken, unpublishing, node-detached, controller-detached, freed, and
  failed release steps), and CSI plugins. One line per event: the raft
  index, the topic, the event's type, the object's ID and a summary. It
  runs until interrupted.

  A stream that fell behind what the servers keep ends with an error that
  says from which index it can resume; list the objects again, then
  resume after that index (or the list's, if higher).

Event Stream Options:

  -topic=<Topic[:key]>
    Stream a topic: Node, Job, Allocation, CSIVolume or CSIPlugin (* for
    all); with :key, only one object's events, e.g. CSIVolume:data. Give
    it more than once for several. Default: every topic the token may
    read.

  -index=<N>
    Start after raft index N (an event's index, or a read's X-Berth-Index).
    Default: from now.

  -json
    Print each event as the API's JSON, one per line.
`,
	run: runEventStream,
}

func runEventStream(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	var topics stringsFlag
	fs.Var(&topics, "topic", "")
	index := fs.Uint64("index", 0, "")
	asJSON := fs.Bool("json", false, "")
	if _, status, ok := m.parse(fs, args, 0, 0); !ok {
		return status
	}
	for _, t := range topics {
		if _, _, err := structs.ParseEventTopic(t); err != nil {
			return m.usageError("-topic: %v", err)
		}
	}
	c, err := m.client(ctx)
	if err != nil {
		return m.fail("%v", err)
	}
	events, err := c.Events().Stream(ctx, topics, *index, nil)
	if err != nil {
		return m.fail("%s", apiError("stream events", err))
	}
	last := *index
	for item := range events {
		if item.Err != nil {
			if errors.Is(item.Err, structs.ErrGone) || last == 0 {
				return m.fail("%s", apiError("stream events", item.Err))
			}
			return m.fail("%s; to go on from the last event shown, run again with -index %d", apiError("stream events", item.Err), last)
		}
		if item.Event.Index > last {
			last = item.Event.Index
		}
		if *asJSON {
			_, err = fmt.Fprintf(m.stdout, "%s\n", item.Raw)
		} else {
			err = writeEventLine(m.stdout, &item.Event)
		}
		if err != nil {
			return m.fail("write the event: %v", err)
		}
	}
	return exitOK // interrupted: the stream ends with ctx
}

// writeEventLine writes one event for people: index, topic, type, key and
// what changed.
func writeEventLine(w io.Writer, e *structs.Event) error {
	key := e.Key
	if e.Topic == structs.TopicNode || e.Topic == structs.TopicAllocation {
		key = shortID(key, false) // a UUID, as every table shows it
	}
	line := fmt.Sprintf("%-8d %-10s %-23s %-12s %s", e.Index, e.Topic, e.Type, key, eventSummary(e))
	_, err := io.WriteString(w, strings.TrimRight(line, " ")+"\n")
	return err
}

// eventSummary says in a few words what an event's payload shows.
func eventSummary(e *structs.Event) string {
	p := e.Payload
	switch {
	case p.Claim != nil:
		c := p.Claim
		s := fmt.Sprintf("alloc %s node %s %s %s", shortID(c.AllocID, false), shortID(c.NodeID, false), c.Mode, c.State)
		if c.LastError != "" {
			s += fmt.Sprintf(", attempt %d failed: %s; next at %s", c.Attempts, c.LastError, formatTime(c.NextAttemptAt))
		}
		return s
	case p.Node != nil:
		n := p.Node
		s := fmt.Sprintf("%s %s %s", n.Name, n.Status, n.SchedulingEligibility)
		if n.DrainStrategy != nil {
			s += " draining"
		}
		return s
	case p.Job != nil:
		s := fmt.Sprintf("%s version %d", p.Job.Type, p.Job.Version)
		if p.Job.Stop {
			s += " stopped"
		}
		return s
	case p.Allocation != nil:
		a := p.Allocation
		return fmt.Sprintf("%s node %s desired %s client %s", a.Name, shortID(a.NodeID, false), a.DesiredStatus, a.ClientStatus)
	case p.Volume != nil:
		v := p.Volume
		return fmt.Sprintf("plugin %s claims %d", v.PluginID, len(v.ReadClaims)+len(v.WriteClaims)+len(v.PastClaims))
	case p.Plugin != nil:
		// The counts the state's join filled in (an instance counts as
		// healthy only on a ready node), as plugin status shows them.
		pl := p.Plugin
		return fmt.Sprintf("controllers %d/%d nodes %d/%d", pl.ControllersHealthy, pl.ControllersExpected, pl.NodesHealthy, pl.NodesExpected)
	}
	return ""
}
