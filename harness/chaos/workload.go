package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/harness/chaos/check"
	"github.com/berth-csi/berth/structs"
)

// PrepareVolumes makes n volumes at the provider, alternately in each
// client's zone, and returns the specs the workload registers them with,
// as vol-0 ... vol-(n-1). Each is created through the API as seed-k and
// deregistered at once, so the storage volume stays at the provider
// (registering an external ID the plugin does not know is refused).
func PrepareVolumes(c *Cluster, n int) []*api.VolumeSpec {
	c.t.Helper()
	var specs []*api.VolumeSpec
	for k := 0; k < n; k++ {
		zone := c.Clients[k%len(c.Clients)].Name
		spec := &api.VolumeSpec{
			PluginID: PluginID,
			RequestedCapabilities: []*structs.CSIVolumeCapability{{
				AccessMode:     structs.CSIVolumeAccessModeSingleNodeWriter,
				AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
			}},
			Topologies: []*structs.CSITopology{{Segments: map[string]string{"zone": zone}}},
		}
		seed := *spec
		seed.ID, seed.Name = fmt.Sprintf("seed-%d", k), fmt.Sprintf("seed-%d", k)
		vols, _, err := c.API(c.Servers[0]).CSIVolumes().Create(&seed)
		if err != nil || len(vols) != 1 {
			c.t.Fatalf("chaos: create volume %s in zone %s: %v (%d volumes)", seed.ID, zone, err, len(vols))
		}
		if _, err := c.API(c.Servers[0]).CSIVolumes().Deregister(seed.ID, false); err != nil {
			c.t.Fatalf("chaos: deregister volume %s: %v", seed.ID, err)
		}
		spec.ID, spec.Name, spec.ExternalID = fmt.Sprintf("vol-%d", k), fmt.Sprintf("vol-%d", k), vols[0].ExternalID
		specs = append(specs, spec)
	}
	return specs
}

// Workload is goroutines that register, read and deregister the volumes
// of specs at random servers until stopped, recording every operation.
type Workload struct {
	c      *Cluster
	specs  []*api.VolumeSpec
	hist   *History
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartWorkload starts workers goroutines, each drawing from its own
// source seeded from seed.
func StartWorkload(c *Cluster, specs []*api.VolumeSpec, workers int, seed uint64, hist *History) *Workload {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Workload{c: c, specs: specs, hist: hist, cancel: cancel}
	clients := make([]*api.Client, len(c.Servers))
	for i, s := range c.Servers {
		clients[i] = c.API(s)
	}
	for i := 0; i < workers; i++ {
		w.wg.Add(1)
		go w.run(ctx, i, rand.New(rand.NewPCG(seed, uint64(i)+1)), clients)
	}
	c.t.Cleanup(w.Stop)
	return w
}

// Stop ends the workers and waits for the operations in flight (bounded
// by the API clients' timeouts). It may be called twice.
func (w *Workload) Stop() {
	w.cancel()
	w.wg.Wait()
}

func (w *Workload) run(ctx context.Context, worker int, rng *rand.Rand, clients []*api.Client) {
	defer w.wg.Done()
	for ctx.Err() == nil {
		i := rng.IntN(len(clients))
		spec := w.specs[rng.IntN(len(w.specs))]
		op := check.Operation{Client: worker, Server: w.c.Servers[i].Name, VolumeID: spec.ID}
		switch p := rng.IntN(100); {
		case p < 40:
			op.Kind, op.Input = check.KindRegister, SpecValue(spec)
		case p < 65:
			op.Kind = check.KindDeregister
		default:
			op.Kind = check.KindRead
		}
		vols := clients[i].CSIVolumes()
		var (
			err error
			out check.Value
		)
		id := w.hist.Invoke(op)
		switch op.Kind {
		case check.KindRegister:
			_, _, err = vols.Register(spec)
		case check.KindDeregister:
			// Nothing retries a deregister whose answer was lost (the api
			// client does not retry, the servers' RPC pool redials only
			// before anything was sent), so a 404 is a real answer.
			_, err = vols.Deregister(spec.ID, false)
		case check.KindRead:
			// Not stale: the read goes to the leader, which answers once
			// it has applied what earlier leaders committed.
			var vol *structs.CSIVolume
			vol, _, err = vols.Info(spec.ID, nil)
			if err == nil {
				out = VolumeValue(vol.PluginID, vol.ExternalID, vol.Name)
			}
		}
		outcome, status := classify(err)
		w.hist.Return(id, outcome, out, status, err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(20+rng.IntN(130)) * time.Millisecond):
		}
	}
}

// SpecValue is what the checkers keep of spec. The workload registers each
// spec unchanged, so the mutable part is empty; the immutable part holds
// the external ID, which belongs to one volume ID for the whole run.
func SpecValue(spec *api.VolumeSpec) check.Value {
	return VolumeValue(spec.PluginID, spec.ExternalID, spec.Name)
}

// VolumeValue is a volume's check.Value from its immutable fields.
func VolumeValue(pluginID, externalID, name string) check.Value {
	return check.Value{Immutable: pluginID + "|" + externalID + "|" + name}
}

// classify says what an operation's error tells of its effect, and the
// HTTP status of the answer if one came.
func classify(err error) (check.Outcome, int) {
	if err == nil {
		return check.OutcomeOK, 0
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return check.OutcomeFromStatus(ae.StatusCode), ae.StatusCode
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return check.OutcomeRefused, 0 // nothing was sent
	}
	return check.OutcomeIndeterminate, 0
}
