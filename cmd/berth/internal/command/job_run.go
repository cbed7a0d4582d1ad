package command

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/client/allocrunner"
	"github.com/berth-csi/berth/structs"
)

var jobRunCommand = &command{
	name:     "job run",
	synopsis: "Run a job from a job spec",
	help: `[options] <file>

  Register a job from a job spec in HCL, or in the API's JSON form of a
  job (see "Specs" in the documentation), then follow its allocations:
  print each one's status as it changes, until all of them run (for a
  service or system job) or have completed (for a batch job), or one
  fails. The spec is checked before anything is sent. Running a job that
  is already registered with a changed spec stores it as the job's next
  version: a group whose tasks, volumes or settings changed has its
  allocations replaced one at a time (its update block: max_parallel,
  min_healthy_time, healthy_deadline), an old allocation stopped and its
  volume claims freed before its replacement is placed; a changed count
  only adds or stops allocations. The run then follows the replacement
  until every allocation runs the new version. "berth job plan" shows
  what a run would change. If <file> is "-", the spec is read from
  standard input.

  The exit status is 0 when every allocation runs or has completed, and 1
  when the spec is wrong, the scheduler could not place every allocation
  (each reason is printed; the job stays registered, and the servers
  place what is missing once it fits: a claim freed, a node ready), or an
  allocation failed.

Run Options:

  -detach
    Return once the job is registered and placed, without following its
    allocations.
`,
	run: runJobRun,
}

// Following a job's allocations: how often to say what is still awaited
// (also how long each blocking query waits), and how long to pause when
// the server answers at once with nothing new.
var (
	jobProgressEvery = 30 * time.Second
	jobFollowRetry   = time.Second
)

func runJobRun(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	detach := fs.Bool("detach", false, "")
	job, c, code := m.openJobSpec(ctx, fs, args)
	if c == nil {
		return code
	}
	resp, wm, err := c.Jobs().Register(job)
	if err != nil {
		return m.fail("%s", apiError("register job "+strconv.Quote(job.ID), err))
	}
	fmt.Fprintf(m.stdout, "==> Registered job %q (%s)\n", job.ID, job.Type)
	for _, a := range resp.Placed {
		fmt.Fprintf(m.stdout, "    Allocation %q placed on node %q (group %q)\n", shortID(a.ID, false), shortID(a.NodeID, false), a.TaskGroup)
	}
	if updating(resp) {
		return m.followUpdate(ctx, c, job, resp, wm.LastIndex, *detach)
	}
	if missing := m.placementFailures(resp.Failures); missing > 0 {
		return m.fail("job %q: %s could not be placed yet (see the reasons above); the job stays registered and the servers place it when it fits (follow it with \"berth job status %s\", or stop it with \"berth job stop %s\")",
			job.ID, plural(missing, "allocation"), job.ID, job.ID)
	}
	if *detach {
		fmt.Fprintf(m.stdout, "Follow the job with \"berth job status %s\"\n", job.ID)
		return exitOK
	}
	if code := m.followJob(ctx, c, job, resp.Placed, wm.LastIndex); code != exitOK || job.Type == structs.JobTypeBatch {
		return code
	}
	return m.waitPlugins(ctx, c, job)
}

// placementFailures prints why allocations were not placed and returns
// how many were not.
func (m *meta) placementFailures(failures []*structs.PlacementFailure) int {
	missing := 0
	for _, f := range failures {
		if f == nil {
			continue
		}
		missing += max(f.Missing, 1)
		fmt.Fprintf(m.stdout, "    Group %q: %s not placed:\n", f.TaskGroup, plural(max(f.Missing, 1), "allocation"))
		if len(f.Reasons) == 0 {
			fmt.Fprintln(m.stdout, "      (the server gave no reason)")
		}
		for _, r := range f.Reasons {
			fmt.Fprintf(m.stdout, "      %s\n", oneLine(r))
		}
	}
	return missing
}

// follower tracks a job's allocations after a register.
type follower struct {
	m     *meta
	c     *api.Client
	job   *structs.Job
	since uint64 // the register's index: allocations created then or later are this run's

	seen    map[string]string // alloc ID -> client status last printed
	waiting int               // allocations not yet where they should be
	news    bool              // step printed something
	// modified is the ModifyIndex at which each allocation's task events
	// were last read; shown is how far the events of each "alloc/task"
	// were shown.
	modified map[string]uint64
	shown    map[string]eventMark
}

// eventMark is the time of the last event shown and how many events of
// that time were shown (events can share a time).
type eventMark struct {
	at time.Time
	n  int
}

// notableEvents are the task events that explain why an allocation is
// not running yet: a task that exited and restarts, a setup that failed
// and is tried again.
var notableEvents = map[string]bool{
	allocrunner.EventTerminated: true, allocrunner.EventRestarting: true, allocrunner.EventNotRestarting: true,
	allocrunner.EventDriverFailure: true, allocrunner.EventSetupFailure: true, allocrunner.EventRetryingVolumes: true,
	allocrunner.EventFenced: true,
}

// taskNews prints the notable task events of an allocation that is not
// yet where it should be, once each, when the allocation changed, so that
// a task in its restart backoff is not waited on in silence.
func (f *follower) taskNews(a *structs.AllocListStub) {
	if a.ClientStatus == f.goal() || isTerminal(a) {
		return
	}
	last, known := f.modified[a.ID]
	f.modified[a.ID] = a.ModifyIndex
	if !known || last == a.ModifyIndex {
		return // first seen (as placed), or unchanged
	}
	alloc, _, err := f.c.Allocations().Info(a.ID, nil)
	if err != nil {
		return // the next change tries again; the status lines go on
	}
	for _, name := range sortedKeys(alloc.TaskStates) {
		ts, key := alloc.TaskStates[name], a.ID+"/"+name
		if ts == nil {
			continue
		}
		mark, same := f.shown[key], 0
		for _, e := range ts.Events {
			if e == nil {
				continue
			}
			if e.Time.Equal(mark.at) {
				if same++; same <= mark.n {
					continue
				}
				mark.n = same
			} else if e.Time.After(mark.at) {
				mark, same = eventMark{at: e.Time, n: 1}, 1
			} else {
				continue
			}
			f.shown[key] = mark
			if notableEvents[e.Type] {
				fmt.Fprintf(f.m.stdout, "    Allocation %q, task %q: %s\n", shortID(a.ID, false), name, eventText(e))
				f.news = true
			}
		}
	}
}

// followJob prints the status changes of the job's allocations until all
// of them run (complete, for batch) or one fails.
func (m *meta) followJob(ctx context.Context, c *api.Client, job *structs.Job, placed []*structs.AllocListStub, since uint64) int {
	f := &follower{m: m, c: c, job: job, since: since, seen: map[string]string{},
		modified: map[string]uint64{}, shown: map[string]eventMark{}}
	tracked := map[string]bool{}
	for _, a := range placed {
		// Announced with the register: only changes are news.
		tracked[a.ID] = true
		f.seen[a.ID] = a.ClientStatus
	}
	fmt.Fprintf(m.stdout, "==> Following the allocations of job %q...\n", job.ID)
	start, lastNews := time.Now(), time.Now()
	first := true
	return m.watchJobAllocs(ctx, c, job.ID, "it stays registered", func(allocs []*structs.AllocListStub) (int, bool) {
		var mine []*structs.AllocListStub
		for _, a := range allocs {
			// This run's: those placed, those made since (replacements),
			// and, when the register placed none because the job did not
			// change, the ones it already had running.
			keep := tracked[a.ID] || a.CreateIndex >= since && since > 0 ||
				first && len(placed) == 0 && a.DesiredStatus == structs.AllocDesiredStatusRun && !isTerminal(a)
			if keep {
				tracked[a.ID] = true
				mine = append(mine, a)
			}
		}
		first = false
		sort.Slice(mine, func(i, j int) bool { return mine[i].ID < mine[j].ID })
		if code, done := f.step(mine); done {
			return code, true
		}
		if f.news {
			lastNews = time.Now()
		} else if time.Since(lastNews) >= jobProgressEvery {
			fmt.Fprintf(m.stdout, "    Still waiting for %s to be %s (%s)\n", plural(f.waiting, "allocation"), f.goal(),
				time.Since(start).Round(time.Second))
			lastNews = time.Now()
		}
		return 0, false
	})
}

// goal is the client status every allocation should reach.
func (f *follower) goal() string {
	if f.job.Type == structs.JobTypeBatch {
		return structs.AllocClientStatusComplete
	}
	return structs.AllocClientStatusRunning
}

// step prints what changed and says whether following is over, with the
// exit status.
func (f *follower) step(allocs []*structs.AllocListStub) (int, bool) {
	m := f.m
	goal := f.goal()
	reached := 0
	f.news = false
	var failed *structs.AllocListStub
	for _, a := range allocs {
		last, known := f.seen[a.ID]
		f.seen[a.ID] = a.ClientStatus
		f.news = f.news || !known || last != a.ClientStatus
		switch {
		case !known:
			fmt.Fprintf(m.stdout, "    Allocation %q (group %q, node %q): %s\n", shortID(a.ID, false), a.TaskGroup,
				shortID(a.NodeID, false), a.ClientStatus)
		case last != a.ClientStatus:
			fmt.Fprintf(m.stdout, "    Allocation %q: %s -> %s\n", shortID(a.ID, false), last, a.ClientStatus)
		}
		if known {
			f.taskNews(a)
		}
		switch {
		case a.ClientStatus == goal && a.DesiredStatus == structs.AllocDesiredStatusRun:
			reached++
		case f.failed(a) && failed == nil:
			failed = a
		}
	}
	f.waiting = len(allocs) - reached

	if failed != nil {
		f.explain(failed)
		return m.fail("job %q: allocation %q %s; see \"berth alloc status %s\" and \"berth alloc logs %s\"",
			f.job.ID, shortID(failed.ID, false), f.failure(failed), shortID(failed.ID, false), shortID(failed.ID, false)), true
	}
	if len(allocs) == 0 {
		fmt.Fprintf(m.stdout, "==> Job %q has no allocations to follow\n", f.job.ID)
		return exitOK, true
	}
	if reached == len(allocs) {
		fmt.Fprintf(m.stdout, "==> Job %q: %s %s\n", f.job.ID, plural(reached, "allocation"), goal)
		return exitOK, true
	}
	return 0, false
}

// failed reports whether an allocation will not reach the goal.
func (f *follower) failed(a *structs.AllocListStub) bool {
	switch a.ClientStatus {
	case structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
		return true
	case structs.AllocClientStatusComplete:
		// A service's or system job's tasks are meant to keep running.
		return f.job.Type != structs.JobTypeBatch
	}
	return a.DesiredStatus == structs.AllocDesiredStatusStop
}

// failure says what happened to a failed allocation.
func (f *follower) failure(a *structs.AllocListStub) string {
	switch a.ClientStatus {
	case structs.AllocClientStatusFailed:
		return "failed"
	case structs.AllocClientStatusLost:
		return "was lost with its node " + strconv.Quote(shortID(a.NodeID, false))
	case structs.AllocClientStatusComplete:
		return "completed, but a " + f.job.Type + " job's tasks should keep running"
	}
	return "was stopped by the servers"
}

// explain prints why the allocation failed: the client's description and
// the last events of its failed tasks.
func (f *follower) explain(a *structs.AllocListStub) {
	m := f.m
	alloc, _, err := f.c.Allocations().Info(a.ID, nil)
	if err != nil {
		return
	}
	if alloc.ClientDescription != "" {
		fmt.Fprintf(m.stdout, "    Allocation %q: %s\n", shortID(a.ID, false), oneLine(alloc.ClientDescription))
	}
	for _, name := range sortedKeys(alloc.TaskStates) {
		ts := alloc.TaskStates[name]
		if ts == nil || !ts.Failed {
			continue
		}
		events := ts.Events
		if len(events) > 3 {
			events = events[len(events)-3:]
		}
		for _, e := range events {
			fmt.Fprintf(m.stdout, "    Task %q: %s\n", name, eventText(e))
		}
	}
}

// eventText shows a task event on one line.
func eventText(e *structs.TaskEvent) string {
	if e.Message == "" {
		return e.Type
	}
	return e.Type + ": " + oneLine(e.Message)
}

// plural shows a count of things: "1 allocation", "2 allocations".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
