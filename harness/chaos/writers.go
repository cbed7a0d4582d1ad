package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

// WritesFile is the file on a writer volume that its writers append
// "allocID timestamp" lines to.
const WritesFile = "writes"

// JobVolume is a volume the job workload runs jobs on. It stays
// registered for the whole run (the volume workload never touches it).
type JobVolume struct {
	ID         string
	ExternalID string
	Zone       string // the client whose plugin instance holds it
	Writer     bool   // single-node-writer, run by writer jobs; else multi-node-reader-only, run by reader jobs
}

// HostDir is where the plugin keeps the volume's files on the host.
func (v JobVolume) HostDir(c *Cluster) string {
	return filepath.Join(c.PluginRoot, v.Zone, "volumes", v.ExternalID)
}

// PrepareJobVolumes creates one writer volume in each client's zone and
// one reader volume in the first client's zone.
func PrepareJobVolumes(c *Cluster) []JobVolume {
	c.t.Helper()
	var vols []JobVolume
	for i, cl := range c.Clients {
		vols = append(vols, c.createJobVolume(fmt.Sprintf("writer-%d", i), cl.Name, structs.CSIVolumeAccessModeSingleNodeWriter))
	}
	return append(vols, c.createJobVolume("reader-0", c.Clients[0].Name, structs.CSIVolumeAccessModeMultiNodeReader))
}

func (c *Cluster) createJobVolume(id, zone string, mode structs.CSIVolumeAccessMode) JobVolume {
	spec := &api.VolumeSpec{
		ID: id, Name: id, PluginID: PluginID,
		RequestedCapabilities: []*structs.CSIVolumeCapability{{AccessMode: mode, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}},
		Topologies:            []*structs.CSITopology{{Segments: map[string]string{"zone": zone}}},
	}
	vols, _, err := c.API(c.Servers[0]).CSIVolumes().Create(spec)
	if err != nil || len(vols) != 1 {
		c.t.Fatalf("chaos: create volume %s in zone %s: %v (%d volumes)", id, zone, err, len(vols))
	}
	return JobVolume{ID: id, ExternalID: vols[0].ExternalID, Zone: zone, Writer: mode == structs.CSIVolumeAccessModeSingleNodeWriter}
}

// writerScript appends a line a tick to the writes file; a lingering
// writer traps SIGTERM and goes on writing for about 2 s before it exits,
// as a database flushing on shutdown would.
func writerScript(linger bool) string {
	trap := ""
	if linger {
		trap = `trap 'stop=1' TERM; `
	}
	return trap + `stop=0; n=0
while :; do
  echo "$BERTH_ALLOC_ID $(date +%s.%N)" >> /data/` + WritesFile + `
  if [ "$stop" = 1 ]; then n=$((n+1)); [ "$n" -ge 20 ] && exit 0; fi
  sleep 0.1
done`
}

const readerScript = `while :; do ls /data > /dev/null; sleep 0.5; done`

// jobFor is a one-group service job on vol: a writer (count 1) or two
// readers.
func jobFor(id string, vol JobVolume, linger bool) *structs.Job {
	count, script, mode, readOnly := 1, writerScript(linger), structs.CSIVolumeAccessModeSingleNodeWriter, false
	if !vol.Writer {
		count, script, mode, readOnly = 2, readerScript, structs.CSIVolumeAccessModeMultiNodeReader, true
	}
	return &structs.Job{ID: id, Name: id, Type: "service", TaskGroups: []*structs.TaskGroup{{
		Name: "g", Count: count,
		Volumes: map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "csi", Source: vol.ID, ReadOnly: readOnly,
			AccessMode: mode, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}},
		Tasks: []*structs.Task{{
			Name: "t", Driver: "exec",
			Config:       map[string]any{"command": "/bin/sh", "args": []string{"-c", script}},
			KillTimeout:  10 * time.Second,
			VolumeMounts: []*structs.VolumeMount{{Volume: "data", Destination: "/data", ReadOnly: readOnly}},
		}},
	}}}
}

// JobOp is one job run or stop of the job workload.
type JobOp struct {
	Job, Action, Server string
	Call, Return        time.Time
	Status              int // the HTTP status of an error answer
	Err                 string
}

// JobWorkload runs and stops jobs on the job volumes until stopped: for
// each volume, two jobs take turns, the next one run as soon as the one
// before is stopped, so that it waits for the claim to be freed.
type JobWorkload struct {
	c      *Cluster
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu  sync.Mutex
	ops []JobOp
}

// StartJobWorkload starts one goroutine per volume, drawing from seed.
func StartJobWorkload(c *Cluster, vols []JobVolume, seed uint64) *JobWorkload {
	ctx, cancel := context.WithCancel(context.Background())
	w := &JobWorkload{c: c, cancel: cancel}
	for i, v := range vols {
		w.wg.Add(1)
		go w.churn(ctx, v, rand.New(rand.NewPCG(seed, 0x6a6f6273+uint64(i))))
	}
	c.t.Cleanup(w.Stop)
	return w
}

// Stop ends the goroutines and waits for them; the jobs they ran last
// stay as they are. It may be called twice.
func (w *JobWorkload) Stop() {
	w.cancel()
	w.wg.Wait()
}

// Ops is every job run and stop made, in the order they returned.
func (w *JobWorkload) Ops() []JobOp {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]JobOp(nil), w.ops...)
}

// JobIDs is the two jobs that take turns on vol.
func JobIDs(vol JobVolume) [2]string {
	return [2]string{vol.ID + "-a", vol.ID + "-b"}
}

func (w *JobWorkload) churn(ctx context.Context, vol JobVolume, rng *rand.Rand) {
	defer w.wg.Done()
	ids := JobIDs(vol)
	for turn := 0; ctx.Err() == nil; turn++ {
		id := ids[turn%2]
		// Half the writers linger after SIGTERM.
		w.do(ctx, rng, id, "run", func(cl *api.Client) error {
			_, _, err := cl.Jobs().Register(jobFor(id, vol, rng.IntN(2) == 0))
			return err
		})
		if !sleepCtx(ctx, time.Duration(2000+rng.IntN(4000))*time.Millisecond) {
			return
		}
		w.do(ctx, rng, id, "stop", func(cl *api.Client) error {
			_, err := cl.Jobs().Deregister(id, false)
			return err
		})
	}
}

// do runs op at a random server, records it, and on an error tries again
// (at another random server) until it succeeds or ctx ends: the next
// step of the churn needs this one done.
func (w *JobWorkload) do(ctx context.Context, rng *rand.Rand, job, action string, op func(*api.Client) error) {
	for ctx.Err() == nil {
		s := w.c.Servers[rng.IntN(len(w.c.Servers))]
		rec := JobOp{Job: job, Action: action, Server: s.Name, Call: time.Now()}
		err := op(w.c.API(s))
		rec.Return = time.Now()
		_, rec.Status = classify(err)
		if err != nil {
			rec.Err = err.Error()
		}
		w.mu.Lock()
		w.ops = append(w.ops, rec)
		w.mu.Unlock()
		if err == nil || !sleepCtx(ctx, 500*time.Millisecond) {
			return
		}
	}
}

// sleepCtx sleeps d; it reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// StopJobs stops every job of the job workload and waits until no job
// volume holds a claim; it fails the test if that takes over timeout.
func (c *Cluster) StopJobs(vols []JobVolume, timeout time.Duration) {
	c.t.Helper()
	for _, v := range vols {
		for _, id := range JobIDs(v) {
			c.waitUntil(timeout, "job "+id+" stopped", func() bool {
				_, err := c.API(c.Servers[0]).Jobs().Deregister(id, false)
				return err == nil || errors.Is(err, structs.ErrNotFound)
			})
		}
	}
	for _, v := range vols {
		c.waitUntil(timeout, "volume "+v.ID+" free of claims", func() bool {
			vol, _, err := c.API(c.Servers[0]).CSIVolumes().Info(v.ID, nil)
			return err == nil && !vol.InUse()
		})
	}
}
