package command

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/berth-csi/berth/structs"
)

var jobPlanCommand = &command{
	name:     "job plan",
	synopsis: "Show what running a job would change",
	help: `[options] <file>

  Show what "berth job run <file>" would do now, without doing it: per
  group, the allocations it would place, stop (over a lowered count) and
  replace (a changed group is replaced allocation by allocation, as its
  update block says), the volume claims the placements would take, and
  what could not be placed. If <file> is "-", the spec is read from
  standard input.

  The exit status is 0 when the run would change nothing, 1 on an error,
  and 2 when it would change something (Nomad's convention).
`,
	run: runJobPlan,
}

func runJobPlan(ctx context.Context, m *meta, args []string) int {
	job, c, code := m.openJobSpec(ctx, m.flagSet(), args)
	if c == nil {
		return code
	}
	plan, err := c.Jobs().Plan(job)
	if err != nil {
		return m.fail("%s", apiError("plan job "+strconv.Quote(job.ID), err))
	}
	switch {
	case !plan.Changed:
		fmt.Fprintf(m.stdout, "Job %q: no change to its spec (version %d)\n", job.ID, plan.JobVersion)
	case plan.JobVersion == 0:
		fmt.Fprintf(m.stdout, "Job %q: new\n", job.ID)
	default:
		fmt.Fprintf(m.stdout, "Job %q: spec changed, version %d -> %d\n", job.ID, plan.JobVersion-1, plan.JobVersion)
	}
	changes := len(plan.Placed) + len(plan.Stopped)
	for _, g := range plan.Groups {
		parts := []string{}
		add := func(n int, what string) {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, what))
			}
		}
		add(countGroup(plan.Placed, g.TaskGroup), "to place")
		add(g.Stop-g.Replace, "to stop (count lowered)")
		add(g.Replace, "to replace now")
		add(g.Outdated, "to replace as the update goes on")
		add(g.Unchanged, "unchanged")
		changes += g.Outdated
		fmt.Fprintf(m.stdout, "    Group %q: %s\n", g.TaskGroup, cmp.Or(strings.Join(parts, ", "), "nothing to do"))
		if g.UpdateFailed != "" {
			fmt.Fprintf(m.stdout, "      the update stopped: %s\n", g.UpdateFailed)
		}
	}
	for _, s := range plan.Stopped {
		fmt.Fprintf(m.stdout, "    Stop allocation %q: %s\n", shortID(s.AllocID, false), s.Description)
	}
	for _, cl := range plan.Claims {
		fmt.Fprintf(m.stdout, "    Claim volume %q: %s on node %q\n", cl.VolumeID, cl.Mode, shortID(cl.NodeID, false))
	}
	m.replacingWaits(plan.Failures)
	if missing := m.placementFailures(notReplacing(plan.Failures)); missing > 0 {
		fmt.Fprintf(m.stdout, "    (a run registers the job anyway; the servers place the rest once it fits)\n")
	}
	if changes == 0 && !plan.Changed {
		return exitOK
	}
	return 2
}

// countGroup counts the allocations of group in allocs.
func countGroup(allocs []*structs.AllocListStub, group string) int {
	n := 0
	for _, a := range allocs {
		if a.TaskGroup == group {
			n++
		}
	}
	return n
}

var jobHistoryCommand = &command{
	name:     "job history",
	synopsis: "List a job's versions",
	help: `[options] <job>

  List the versions of a job the servers keep (the last 6), newest first:
  each one's number and when it was submitted. "berth job revert" runs
  one of them again.

History Options:

  -json
    Print the versions as JSON, each a whole job.
`,
	run: runJobHistory,
}

func runJobHistory(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	asJSON := fs.Bool("json", false, "")
	pos, status, ok := m.parse(fs, args, 1, 1)
	if !ok {
		return status
	}
	c, id, code := jobStatus.connect(ctx, m, pos[0])
	if c == nil {
		return code
	}
	versions, _, err := c.Jobs().Versions(id, nil)
	if err != nil {
		return m.fail("%s", apiError("read the versions of job "+strconv.Quote(id), err))
	}
	if *asJSON {
		return m.printValue(versions)
	}
	rows := make([][]string, 0, len(versions))
	for _, v := range versions {
		submitted := "-"
		if v.SubmitTime > 0 {
			submitted = time.Unix(0, v.SubmitTime).UTC().Format(time.RFC3339)
		}
		rows = append(rows, []string{strconv.FormatUint(v.Version, 10), submitted, groupSummary(v)})
	}
	table(m.stdout, []string{"Version", "Submitted", "Groups"}, rows)
	return exitOK
}

// groupSummary names a job version's groups with their counts.
func groupSummary(j *structs.Job) string {
	parts := []string{}
	for _, tg := range j.TaskGroups {
		if tg != nil {
			parts = append(parts, fmt.Sprintf("%s x%d", tg.Name, tg.Count))
		}
	}
	return cmp.Or(strings.Join(parts, ", "), "-")
}

var jobRevertCommand = &command{
	name:     "job revert",
	synopsis: "Run an earlier version of a job again",
	help: `[options] <job> <version>

  Run a kept earlier version of a job again (see "berth job history"): it
  becomes the job's next version, and its allocations replace the running
  ones as for any change, as the groups' update blocks say.

Revert Options:

  -detach
    Return once the revert is registered, without following it.
`,
	run: runJobRevert,
}

func runJobRevert(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	detach := fs.Bool("detach", false, "")
	pos, status, ok := m.parse(fs, args, 2, 2)
	if !ok {
		return status
	}
	version, err := strconv.ParseUint(pos[1], 10, 64)
	if err != nil {
		return m.usageError("version %q is not a version number; see \"berth job history %s\"", pos[1], pos[0])
	}
	c, id, code := jobStatus.connect(ctx, m, pos[0])
	if c == nil {
		return code
	}
	resp, wm, err := c.Jobs().Revert(id, version)
	if err != nil {
		return m.fail("%s", apiError(fmt.Sprintf("revert job %q to version %d", id, version), err))
	}
	job, _, err := c.Jobs().Info(id, nil)
	if err != nil {
		return m.fail("%s", apiError("read job "+strconv.Quote(id), err))
	}
	fmt.Fprintf(m.stdout, "==> Job %q reverted to version %d's spec, as version %d\n", id, version, resp.JobVersion)
	if updating(resp) {
		return m.followUpdate(ctx, c, job, resp, wm.LastIndex, *detach)
	}
	if missing := m.placementFailures(resp.Failures); missing > 0 {
		return m.fail("job %q: %s could not be placed yet (see the reasons above)", id, plural(missing, "allocation"))
	}
	return exitOK
}
