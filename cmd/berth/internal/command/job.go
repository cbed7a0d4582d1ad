package command

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/cmd/berth/internal/spec"
	"github.com/berth-csi/berth/structs"
)

var jobStatusCommand = &command{
	name:     "job status",
	synopsis: "Display status information about jobs",
	help: `[options] [job]

  Display the jobs, or one job with its groups, volumes and allocations. A
  job may be given by a unique prefix of its ID.

Status Options:

  -verbose
    Show full allocation and node IDs.

  -json
    Print the API's JSON.
`,
	run: runJobStatus,
}

func runJobStatus(ctx context.Context, m *meta, args []string) int {
	return runStatus(ctx, m, args, jobStatus)
}

// jobView is a job with what its status shows beside it.
type jobView struct {
	job    *structs.Job
	status string // the server's: pending, running, dead
	allocs []*structs.AllocListStub
}

// jobStatus also resolves the job for job stop.
var jobStatus = statusSpec[*structs.JobListStub, *jobView]{
	noun:     "job",
	listCmd:  "berth job status",
	listPath: "/v1/jobs",
	getPath:  "/v1/job/",
	list: func(c *api.Client, q *api.QueryOptions) ([]*structs.JobListStub, *api.QueryMeta, error) {
		return c.Jobs().List(q)
	},
	id: func(j *structs.JobListStub) string { return j.ID },
	get: func(c *api.Client, id string) (*jobView, *api.QueryMeta, error) {
		job, qm, err := c.Jobs().Info(id, nil)
		if err != nil {
			return nil, nil, err
		}
		allocs, _, err := c.Jobs().Allocations(id, nil)
		if err != nil {
			return nil, nil, err
		}
		v := &jobView{job: job, allocs: allocs}
		if stubs, _, err := c.Jobs().List(&api.QueryOptions{Prefix: id}); err == nil {
			for _, s := range stubs {
				if s.ID == id {
					v.status = jobStatusText(s.Status, s.Stop)
				}
			}
		}
		return v, qm, nil
	},
	printList: (*meta).jobList,
	printOne:  (*meta).jobInfo,
}

func jobStatusText(status string, stop bool) string {
	status = orNone(status)
	if stop {
		return status + " (stopped)"
	}
	return status
}

func (m *meta) jobList(jobs []*structs.JobListStub, _ bool) {
	if len(jobs) == 0 {
		m.println("No jobs")
		return
	}
	rows := make([][]string, 0, len(jobs))
	for _, j := range jobs {
		rows = append(rows, []string{j.ID, j.Type, jobStatusText(j.Status, j.Stop)})
	}
	table(m.stdout, []string{"ID", "Type", "Status"}, rows)
}

func (m *meta) jobInfo(v *jobView, verbose bool) {
	j := v.job
	status := v.status
	if status == "" {
		status = jobStatusText("", j.Stop)
	}
	kv(m.stdout, [][2]string{
		{"ID", j.ID},
		{"Name", j.Name},
		{"Namespace", orNone(j.Namespace)},
		{"Type", j.Type},
		{"Status", status},
	})

	section(m.stdout, "Task Groups")
	groups := make([][]string, 0, len(j.TaskGroups))
	var vols [][]string
	for _, tg := range j.TaskGroups {
		count := strconv.Itoa(tg.Count)
		if j.Type == structs.JobTypeSystem {
			count = "one per node"
		}
		tasks := make([]string, 0, len(tg.Tasks))
		for _, t := range tg.Tasks {
			tasks = append(tasks, t.Name)
		}
		groups = append(groups, []string{tg.Name, count, orNone(strings.Join(tasks, ", "))})
		for _, alias := range sortedKeys(tg.Volumes) {
			r := tg.Volumes[alias]
			vols = append(vols, []string{tg.Name, alias, r.Source, string(r.AccessMode), string(r.AttachmentMode),
				strconv.FormatBool(r.ReadOnly), strconv.FormatBool(r.PerAlloc)})
		}
	}
	if len(groups) == 0 {
		m.println("None")
	} else {
		table(m.stdout, []string{"Name", "Count", "Tasks"}, groups)
	}
	if len(vols) > 0 {
		section(m.stdout, "Volumes")
		table(m.stdout, []string{"Group", "Volume", "Source", "Access Mode", "Attachment Mode", "Read Only", "Per Alloc"}, vols)
	}

	section(m.stdout, "Summary")
	m.allocSummary(j, v.allocs)

	section(m.stdout, "Allocations")
	m.allocTable(v.allocs, verbose)
}

// allocSummary counts the allocations of each group by client status.
func (m *meta) allocSummary(j *structs.Job, allocs []*structs.AllocListStub) {
	statuses := []string{structs.AllocClientStatusPending, structs.AllocClientStatusRunning, structs.AllocClientStatusComplete,
		structs.AllocClientStatusFailed, structs.AllocClientStatusLost}
	counts := map[string]map[string]int{}
	var names []string
	for _, tg := range j.TaskGroups {
		counts[tg.Name] = map[string]int{}
		names = append(names, tg.Name)
	}
	for _, a := range allocs {
		if counts[a.TaskGroup] == nil {
			counts[a.TaskGroup] = map[string]int{}
			names = append(names, a.TaskGroup)
		}
		counts[a.TaskGroup][a.ClientStatus]++
	}
	rows := make([][]string, 0, len(names))
	for _, n := range names {
		row := []string{n}
		for _, s := range statuses {
			row = append(row, strconv.Itoa(counts[n][s]))
		}
		rows = append(rows, row)
	}
	table(m.stdout, []string{"Task Group", "Pending", "Running", "Complete", "Failed", "Lost"}, rows)
}

// allocTable lists allocations, newest first.
func (m *meta) allocTable(allocs []*structs.AllocListStub, verbose bool) {
	if len(allocs) == 0 {
		m.println("No allocations")
		return
	}
	sorted := append([]*structs.AllocListStub(nil), allocs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].CreateIndex != sorted[j].CreateIndex {
			return sorted[i].CreateIndex > sorted[j].CreateIndex
		}
		return sorted[i].ID < sorted[j].ID
	})
	rows := make([][]string, 0, len(sorted))
	for _, a := range sorted {
		rows = append(rows, []string{shortID(a.ID, verbose), orNone(shortID(a.NodeID, verbose)), a.TaskGroup,
			a.DesiredStatus, a.ClientStatus})
	}
	table(m.stdout, []string{"ID", "Node ID", "Task Group", "Desired", "Status"}, rows)
}

var jobStopCommand = &command{
	name:     "job stop",
	synopsis: "Stop a running job",
	help: `[options] <job>

  Stop a job: the servers stop its allocations and release the volumes
  they claim. The job may be given by a unique prefix of its ID. A stopped
  job stays listed, as dead, until it is purged; "berth job run" starts
  it again.

Stop Options:

  -purge
    Also remove the job, so that it is no longer listed. Its allocations
    are removed too, each once its tasks are over and the claims on its
    volumes are freed (at once for those already so; garbage collection
    removes the others).
`,
	run: runJobStop,
}

func runJobStop(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	purge := fs.Bool("purge", false, "")
	pos, status, ok := m.parse(fs, args, 1, 1)
	if !ok {
		return status
	}
	c, id, code := jobStatus.connect(ctx, m, pos[0])
	if c == nil {
		return code
	}
	if _, err := c.Jobs().Deregister(id, *purge); err != nil {
		return m.fail("%s", apiError("stop job "+strconv.Quote(id), err))
	}
	if *purge {
		fmt.Fprintf(m.stdout, "Job %q stopped and purged; its allocations stop and release their volumes\n", id)
		return exitOK
	}
	fmt.Fprintf(m.stdout, "Job %q stopped; its allocations stop and release their volumes (see \"berth job status %s\")\n", id, id)
	return exitOK
}

// readJobSpec parses a job spec file, or standard input for "-".
func (m *meta) readJobSpec(path string) (*structs.Job, error) {
	if path != "-" {
		job, err := spec.ParseJobFile(path)
		return job, specError("job", err)
	}
	src, err := io.ReadAll(m.stdin)
	if err != nil {
		return nil, fmt.Errorf("cannot read the job spec from standard input: %w", err)
	}
	job, err := spec.ParseJob("<stdin>", src)
	return job, specError("job", err)
}

// openJobSpec is the start of job run and job plan: it parses args with
// fs (one argument, the spec file or "-"), reads the job spec and opens
// the client. A nil client means stop, with code the exit status.
func (m *meta) openJobSpec(ctx context.Context, fs *flag.FlagSet, args []string) (job *structs.Job, c *api.Client, code int) {
	pos, status, ok := m.parse(fs, args, 1, 1)
	if !ok {
		return nil, nil, status
	}
	job, err := m.readJobSpec(pos[0])
	if err != nil {
		return nil, nil, m.fail("%v", err)
	}
	if c, err = m.client(ctx); err != nil {
		return nil, nil, m.fail("%v", err)
	}
	return job, c, exitOK
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
