package command

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

var allocStatusCommand = &command{
	name:     "alloc status",
	synopsis: "Display the status of an allocation",
	help: `[options] <alloc>

  Display an allocation: where it runs, its status, each task's state and
  recent events, and the CSI volumes of its group with this allocation's
  claim on each (its mode, where its release is, and the last error). The
  allocation may be given by a unique prefix of its ID.

Status Options:

  -verbose
    Show full IDs and every task event, and the timeline: each step of the
    allocation's life and of its claims' (placed, received, volumes
    mounted, tasks started, stop requested ... claim freed) with the gap
    from the step before.

  -json
    Print the API's JSON.
`,
	run: runAllocStatus,
}

// allocStatus resolves allocations by ID prefix.
var allocStatus = statusSpec[*structs.AllocListStub, *structs.Allocation]{
	noun:     "allocation",
	listCmd:  "berth job status <job>",
	listPath: "/v1/allocations",
	getPath:  "/v1/allocation/",
	list: func(c *api.Client, q *api.QueryOptions) ([]*structs.AllocListStub, *api.QueryMeta, error) {
		return c.Allocations().List(q)
	},
	id: func(a *structs.AllocListStub) string { return a.ID },
	get: func(c *api.Client, id string) (*structs.Allocation, *api.QueryMeta, error) {
		return c.Allocations().Info(id, nil)
	},
}

func runAllocStatus(ctx context.Context, m *meta, args []string) int {
	r, status := m.startRead(ctx, args, 1, true)
	if r == nil {
		return status
	}
	if len(r.pos) == 0 {
		return m.usageError("this command takes one argument")
	}
	id, err := allocStatus.resolve(r.c, r.pos[0])
	if err != nil {
		return m.fail("%s", err)
	}
	get := func() (*structs.Allocation, error) {
		a, _, err := r.c.Allocations().Info(id, nil)
		return a, err
	}
	return show(r, "/v1/allocation/"+url.PathEscape(id), nil, "read allocation "+strconv.Quote(id), get,
		func(a *structs.Allocation) { m.allocInfo(r.c, a, r.verbose) })
}

func (m *meta) allocInfo(c *api.Client, a *structs.Allocation, verbose bool) {
	pairs := [][2]string{
		{"ID", a.ID},
		{"Name", orNone(a.Name)},
		{"Node ID", orNone(shortID(a.NodeID, verbose))},
		{"Job ID", a.JobID},
		{"Task Group", a.TaskGroup},
		{"Desired Status", a.DesiredStatus},
		{"Client Status", a.ClientStatus},
	}
	if a.ClientDescription != "" {
		pairs = append(pairs, [2]string{"Client Description", oneLine(a.ClientDescription)})
	}
	if a.DesiredDescription != "" {
		pairs = append(pairs, [2]string{"Desired Description", oneLine(a.DesiredDescription)})
	}
	pairs = append(pairs, [2]string{"Job Version", strconv.FormatUint(a.JobVersion, 10)})
	pairs = append(pairs, rescheduleInfo(a, time.Now())...)
	kv(m.stdout, pairs)

	tg := a.LookupTaskGroup()
	for _, name := range allocTaskNames(a, tg) {
		m.taskState(name, a.TaskStates[name], verbose)
	}
	steps := ownSteps(a.Timeline)
	if tg != nil && len(tg.Volumes) > 0 {
		section(m.stdout, "CSI Volumes")
		steps = append(steps, m.allocVolumes(c, a, tg, verbose)...)
	}
	if verbose {
		section(m.stdout, "Timeline")
		if len(steps) == 0 {
			m.println("No steps recorded")
		} else {
			timelineTable(m.stdout, steps)
		}
	}
}

// allocTaskNames are the group's tasks in the job's order, then any task
// the client reports that the job does not name.
func allocTaskNames(a *structs.Allocation, tg *structs.TaskGroup) []string {
	var names []string
	seen := map[string]bool{}
	if tg != nil {
		for _, t := range tg.Tasks {
			names = append(names, t.Name)
			seen[t.Name] = true
		}
	}
	for _, name := range sortedKeys(a.TaskStates) {
		if !seen[name] {
			names = append(names, name)
		}
	}
	return names
}

// taskState shows one task's state and its recent events, newest first.
func (m *meta) taskState(name string, ts *structs.TaskState, verbose bool) {
	if ts == nil {
		section(m.stdout, fmt.Sprintf("Task %q is %q", name, structs.TaskStatePending))
		m.println("No events yet")
		return
	}
	section(m.stdout, fmt.Sprintf("Task %q is %q", name, ts.State))
	kv(m.stdout, [][2]string{
		{"Started At", formatTime(ts.StartedAt)},
		{"Finished At", formatTime(ts.FinishedAt)},
		{"Total Restarts", strconv.Itoa(ts.Restarts)},
		{"Failed", strconv.FormatBool(ts.Failed)},
	})
	section(m.stdout, "Recent Events:")
	if len(ts.Events) == 0 {
		m.println("No events")
		return
	}
	events := ts.Events
	if !verbose && len(events) > 10 {
		events = events[len(events)-10:]
	}
	rows := make([][]string, 0, len(events))
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e == nil {
			continue
		}
		rows = append(rows, []string{formatTime(e.Time), e.Type, oneLine(e.Message)})
	}
	table(m.stdout, []string{"Time", "Type", "Message"}, rows)
}

// allocVolumes shows each group volume and this allocation's claim on it,
// read from the volume itself, and returns the claims' timelines.
func (m *meta) allocVolumes(c *api.Client, a *structs.Allocation, tg *structs.TaskGroup, verbose bool) []timelineStep {
	type row struct {
		alias, volumeID, plugin, access, mode, state, node string
		claim                                              *structs.CSIVolumeClaim
	}
	var rows []row
	withErrors := false
	for _, alias := range sortedKeys(tg.Volumes) {
		req := tg.Volumes[alias]
		r := row{alias: alias, volumeID: volumeSource(req, a.Name), plugin: "-", access: string(req.AccessMode), mode: "-", node: "-"}
		vol, _, err := c.CSIVolumes().Info(r.volumeID, nil)
		switch {
		case errors.Is(err, structs.ErrNotFound):
			r.state = "volume not found"
		case err != nil:
			r.state = "unknown: " + oneLine(apiError("read volume "+strconv.Quote(r.volumeID), err))
		default:
			r.plugin = vol.PluginID
			r.claim = vol.ClaimOf(a.ID)
			if r.claim == nil {
				r.state = "not claimed"
				break
			}
			r.mode = string(r.claim.Mode)
			r.state = r.claim.State.String()
			r.node = orNone(shortID(r.claim.NodeID, verbose))
			withErrors = withErrors || r.claim.LastError != ""
		}
		rows = append(rows, r)
	}
	header := []string{"Volume", "Volume ID", "Plugin ID", "Access Mode", "Claim Mode", "Claim State", "Node ID"}
	if withErrors {
		header = append(header, "Attempts", "Last Error")
	}
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		line := []string{r.alias, r.volumeID, r.plugin, orNone(r.access), r.mode, r.state, r.node}
		if withErrors {
			attempts, lastErr := "-", "-"
			if r.claim != nil {
				attempts, lastErr = strconv.Itoa(r.claim.Attempts), orNone(oneLine(r.claim.LastError))
			}
			line = append(line, attempts, lastErr)
		}
		out = append(out, line)
	}
	table(m.stdout, header, out)
	var steps []timelineStep
	for _, r := range rows {
		if r.claim != nil {
			steps = append(steps, claimSteps(r.volumeID, r.claim.Timeline)...)
		}
	}
	return steps
}

// volumeSource is the ID of the volume a request names for an allocation
// ("data", or "data[1]" for per_alloc).
func volumeSource(req *structs.VolumeRequest, allocName string) string {
	idx, ok := structs.AllocIndex(allocName)
	if !ok {
		return req.Source
	}
	return req.SourceFor(idx)
}

var allocLogsCommand = &command{
	name:     "alloc logs",
	synopsis: "Print the logs of an allocation's task",
	help: `[options] <alloc> [<task>]

  Print what a task of an allocation wrote to its standard output, or with
  -stderr its standard error, as the client that runs it keeps it. The
  allocation may be given by a unique prefix of its ID. The task may be
  left out when the allocation's group has only one.

Logs Options:

  -stderr
    Print the task's standard error instead of its standard output.
`,
	run: runAllocLogs,
}

func runAllocLogs(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	stderr := fs.Bool("stderr", false, "")
	pos, status, ok := m.parse(fs, args, 1, 2)
	if !ok {
		return status
	}
	c, id, code := allocStatus.connect(ctx, m, pos[0])
	if c == nil {
		return code
	}
	named := ""
	if len(pos) == 2 {
		named = pos[1]
	}
	task, err := logTask(c, id, named)
	if err != nil {
		return m.fail("%s", err)
	}
	kind := api.LogStdout
	if *stderr {
		kind = api.LogStderr
	}
	data, _, err := c.Allocations().Logs(id, task, kind, 0, 0)
	if err != nil {
		return m.fail("%s", apiError(fmt.Sprintf("read the %s of task %q of allocation %q", kind, task, id), err))
	}
	if _, err := m.stdout.Write(data); err != nil {
		return m.fail("write the log: %v", err)
	}
	return exitOK
}

// logTask is the task whose log to print: named, if it is one of the
// allocation's tasks, else the group's only task; an unknown name, or
// none with several tasks, is an error that lists them.
func logTask(c *api.Client, id, named string) (string, error) {
	a, _, err := c.Allocations().Info(id, nil)
	if err != nil {
		return "", errors.New(apiError("read allocation "+strconv.Quote(id), err))
	}
	names := allocTaskNames(a, a.LookupTaskGroup())
	if named != "" {
		if slices.Contains(names, named) {
			return named, nil
		}
		return "", fmt.Errorf("allocation %q has no task %q; its tasks are %s", id, named, quoteNames(names))
	}
	switch len(names) {
	case 1:
		return names[0], nil
	case 0:
		return "", fmt.Errorf("allocation %q has no tasks to read logs of", id)
	}
	return "", fmt.Errorf("allocation %q has %d tasks: %s; name the one whose log to print: berth alloc logs %s <task>",
		id, len(names), quoteNames(names), shortID(id, false))
}

func quoteNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += strconv.Quote(n)
	}
	return out
}

// rescheduleInfo says how an allocation stands with its group's
// reschedule policy: the failed allocation it replaces and the attempts
// made, and, for a failed one, when the leader replaces it (or that it
// will not).
func rescheduleInfo(a *structs.Allocation, now time.Time) [][2]string {
	var out [][2]string
	if a.PreviousAllocation != "" {
		out = append(out, [2]string{"Replaces", a.PreviousAllocation})
	}
	tg := a.LookupTaskGroup()
	if tg == nil || a.Job == nil {
		return out
	}
	policy := tg.ReschedulePolicy(a.Job.Type)
	if len(a.RescheduleEvents) > 0 {
		out = append(out, [2]string{"Reschedule Attempts", fmt.Sprintf("%d (policy: %s)", len(a.RescheduleEvents), policy.AttemptsText())})
	}
	if a.ClientStatus != structs.AllocClientStatusFailed || a.DesiredStatus != structs.AllocDesiredStatusRun {
		return out
	}
	at, attempt, ok := a.NextReschedule(policy)
	switch {
	case !ok:
		out = append(out, [2]string{"Next Reschedule", "none: its reschedule policy (" + policy.AttemptsText() +
			") is used up; run the job again to replace it"})
	case at.After(now):
		out = append(out, [2]string{"Next Reschedule", fmt.Sprintf("attempt %d at %s (in %s)", attempt, formatTime(at),
			at.Sub(now).Round(time.Second))})
	default:
		out = append(out, [2]string{"Next Reschedule", fmt.Sprintf("attempt %d due now", attempt)})
	}
	return out
}
