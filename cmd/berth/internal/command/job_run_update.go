package command

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

// updating reports whether a run replaces allocations: a rolling update of
// a changed group, now or as it goes on.
func updating(resp *structs.JobRegisterResponse) bool {
	for _, g := range resp.Groups {
		if g != nil && (g.Replace > 0 || g.Outdated > 0) {
			return true
		}
	}
	return false
}

// followUpdate prints a rolling update as it goes: the allocations it
// stops and those that replace them, until every allocation of the job
// runs its new version, or a replacement fails (the update stops there).
func (m *meta) followUpdate(ctx context.Context, c *api.Client, job *structs.Job, resp *structs.JobRegisterResponse,
	since uint64, detach bool) int {
	v := resp.JobVersion
	fmt.Fprintf(m.stdout, "==> Job %q version %d: replacing its allocations\n", job.ID, v)
	replaced := map[string]bool{} // the groups whose allocations are replaced; the others keep theirs
	var deadline time.Duration    // no news for longer: the servers' update stopped at its healthy_deadline
	for _, g := range resp.Groups {
		if g.Replace > 0 || g.Outdated > 0 {
			replaced[g.TaskGroup] = true
			deadline = max(deadline, groupUpdate(job, g.TaskGroup).HealthyDeadline)
			fmt.Fprintf(m.stdout, "    Group %q: %s to replace, %s at a time\n", g.TaskGroup,
				plural(g.Replace+g.Outdated, "allocation"), strconv.Itoa(groupUpdate(job, g.TaskGroup).MaxParallel))
		}
	}
	m.replacingWaits(resp.Failures)
	if missing := m.placementFailures(notReplacing(resp.Failures)); missing > 0 {
		return m.fail("job %q: %s could not be placed (see the reasons above); the update waits, and the servers place it when it fits",
			job.ID, plural(missing, "allocation"))
	}
	if detach {
		fmt.Fprintf(m.stdout, "Follow the update with \"berth job status %s\"\n", job.ID)
		return exitOK
	}
	seen := map[string]string{} // alloc ID -> what was last printed of it
	start, lastNews, lastChange := time.Now(), time.Now(), time.Now()
	return m.watchJobAllocs(ctx, c, job.ID, "its update goes on", func(allocs []*structs.AllocListStub) (int, bool) {
		sort.Slice(allocs, func(i, j int) bool { return allocs[i].CreateIndex < allocs[j].CreateIndex })
		news, old, fresh, running := false, 0, 0, 0
		for _, a := range allocs {
			if a.JobVersion > v {
				return m.fail("job %q: version %d was run meanwhile; follow it with \"berth job status %s\"", job.ID, a.JobVersion, job.ID), true
			}
			if !replaced[a.TaskGroup] {
				continue
			}
			line := ""
			over := clientTerminal(a.ClientStatus)
			wanted := a.DesiredStatus == structs.AllocDesiredStatusRun
			switch {
			case a.JobVersion < v && wanted && !over:
				old++ // to be replaced as the update goes on
			case a.JobVersion < v && !wanted && !over:
				line = fmt.Sprintf("Allocation %q (version %d): stopping", shortID(a.ID, false), a.JobVersion)
			case a.JobVersion < v && !wanted && a.ModifyIndex >= since:
				line = fmt.Sprintf("Allocation %q (version %d): stopped", shortID(a.ID, false), a.JobVersion)
			case a.JobVersion == v && wanted:
				fresh++
				line = fmt.Sprintf("Allocation %q (version %d, group %q, node %q): %s", shortID(a.ID, false), v, a.TaskGroup,
					shortID(a.NodeID, false), a.ClientStatus)
				switch a.ClientStatus {
				case structs.AllocClientStatusRunning:
					running++
				case structs.AllocClientStatusComplete:
					if job.Type == structs.JobTypeBatch {
						running++ // a batch allocation is done when complete
					}
				case structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
					fmt.Fprintf(m.stdout, "    %s\n", line)
					return m.fail("job %q: allocation %q of version %d %s, so the update stopped; the allocations not yet replaced keep running. "+
						"See \"berth alloc status %s\"; fix the job and run it again, or go back with \"berth job revert %s %d\"",
						job.ID, shortID(a.ID, false), v, a.ClientStatus, shortID(a.ID, false), job.ID, max(int(v)-1, 0)), true
				}
			}
			if line != "" && seen[a.ID] != line {
				seen[a.ID] = line
				fmt.Fprintf(m.stdout, "    %s\n", line)
				news = true
			}
		}
		if old == 0 && fresh > 0 && running == fresh {
			fmt.Fprintf(m.stdout, "==> Job %q: version %d, %s running\n", job.ID, v, plural(running, "allocation"))
			return exitOK, true
		}
		if news {
			lastNews, lastChange = time.Now(), time.Now()
		} else if time.Since(lastChange) > deadline+jobProgressEvery {
			return m.fail("job %q: nothing changed for longer than the update's healthy_deadline (%s): the update stopped, and %s of older versions keep running. "+
				"See \"berth job status %s\"; fix the job and run it again, or go back with \"berth job revert %s %d\"",
				job.ID, deadline, plural(old, "allocation"), job.ID, job.ID, max(int(v)-1, 0)), true
		} else if time.Since(lastNews) >= jobProgressEvery {
			fmt.Fprintf(m.stdout, "    Still replacing: %s of version %d running, %s of older versions left (%s)\n",
				plural(running, "allocation"), v, plural(old, "allocation"), time.Since(start).Round(time.Second))
			lastNews = time.Now()
		}
		return 0, false
	})
}

// replacingWaits prints the groups whose placements wait for the
// allocations they replace to stop and free their claims.
func (m *meta) replacingWaits(failures []*structs.PlacementFailure) {
	for _, f := range failures {
		if f == nil || !f.Replacing {
			continue
		}
		n, rest := max(f.Missing, 1), "wait for the ones they replace to stop and free their claims"
		if n == 1 {
			rest = "waits for the one it replaces to stop and free its claims"
		}
		fmt.Fprintf(m.stdout, "    Group %q: %s %s\n", f.TaskGroup, plural(n, "allocation"), rest)
	}
}

// notReplacing drops the failures that only wait for a replaced
// allocation to stop.
func notReplacing(failures []*structs.PlacementFailure) []*structs.PlacementFailure {
	var out []*structs.PlacementFailure
	for _, f := range failures {
		if f != nil && !f.Replacing {
			out = append(out, f)
		}
	}
	return out
}

// groupUpdate is the group's update block, as the servers default it.
func groupUpdate(job *structs.Job, group string) structs.UpdateStrategy {
	if tg := job.LookupTaskGroup(group); tg != nil {
		return tg.UpdateStrategy()
	}
	return (&structs.TaskGroup{}).UpdateStrategy()
}
