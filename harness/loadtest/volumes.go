package loadtest

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

// volumePrefix starts the ID of every volume the runs and the fill
// register.
const volumePrefix = "lt-v"

// volumeSpec is berth volume id on the mock's storage volume ext.
func volumeSpec(id, ext string) *api.VolumeSpec {
	return &api.VolumeSpec{ID: id, Name: id, PluginID: PluginID, ExternalID: ext,
		RequestedCapabilities: []*structs.CSIVolumeCapability{volumeCapability}}
}

// Registered is the volumes a run registered: berth IDs and their storage
// volumes, aligned.
type Registered struct {
	mu   sync.Mutex
	IDs  []string
	Exts []string
}

func (r *Registered) add(id, ext string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.IDs = append(r.IDs, id)
	r.Exts = append(r.Exts, ext)
}

// register registers a new volume on a storage volume from pool through
// cl, recording it in reg.
func (c *Cluster) register(cl *api.Client, pool *Pool, reg *Registered) error {
	ext, ok := pool.Take()
	if !ok {
		return errRanOut
	}
	id := fmt.Sprintf("%s%07d", volumePrefix, c.volSeq.Add(1))
	if _, _, err := cl.CSIVolumes().Register(volumeSpec(id, ext)); err != nil {
		return fmt.Errorf("loadtest: register volume %s on storage volume %s: %w", id, ext, err)
	}
	reg.add(id, ext)
	return nil
}

// RegisterRun registers new volumes at agent at, callers at a time, for
// d or until pool runs out.
func (c *Cluster) RegisterRun(at *Agent, callers int, d time.Duration, pool *Pool) (Throughput, *Registered, error) {
	cl, reg := c.API(at), &Registered{}
	r, err := runFor(callers, d, func(int, int) error { return c.register(cl, pool, reg) })
	return r, reg, err
}

// Fill registers n new volumes at agent at, callers at a time, and
// returns how long it took. pool must hold n storage volumes.
func (c *Cluster) Fill(at *Agent, n, callers int, pool *Pool) (Throughput, error) {
	cl, reg := c.API(at), &Registered{}
	took, err := runCount(callers, n, func(int) error { return c.register(cl, pool, reg) })
	return Throughput{Callers: callers, Ops: len(reg.IDs), Elapsed: took}, err
}

// deregisterCallers is how many deregisters Deregister has in flight.
const deregisterCallers = 16

// Deregister deregisters the volumes of reg at agent at and returns their
// storage volumes to pool, for the next run.
func (c *Cluster) Deregister(at *Agent, reg *Registered, pool *Pool) error {
	cl := c.API(at)
	_, err := runCount(deregisterCallers, len(reg.IDs), func(i int) error {
		if _, err := cl.CSIVolumes().Deregister(reg.IDs[i], false); err != nil {
			return fmt.Errorf("loadtest: deregister volume %s: %w", reg.IDs[i], err)
		}
		return nil
	})
	if err == nil {
		pool.Put(reg.Exts...)
	}
	return err
}

// ListLatency lists every volume at agent at (with ?stale when stale)
// reps times through package api, checking that each answer holds want
// volumes, and reps times more reading the raw answer to its last byte
// without decoding it.
func (c *Cluster) ListLatency(at *Agent, stale bool, reps, want int) (decoded, wire Latencies, err error) {
	cl := c.API(at)
	for range reps {
		start := time.Now()
		vols, _, err := cl.CSIVolumes().List(&api.QueryOptions{AllowStale: stale})
		if err != nil {
			return nil, nil, fmt.Errorf("loadtest: list volumes at %s: %w", at.Name, err)
		}
		decoded = append(decoded, time.Since(start))
		if len(vols) != want {
			return nil, nil, fmt.Errorf("loadtest: the volume list at %s (stale %v) holds %d volumes, not %d", at.Name, stale, len(vols), want)
		}
	}
	_, wire, err = c.listWire(at, stale, reps)
	return decoded, wire, err
}

// listWire lists every volume at agent at reps times, each to the last
// byte, undecoded, and returns the bytes of the last and the times.
func (c *Cluster) listWire(at *Agent, stale bool, reps int) (int64, Latencies, error) {
	var wire Latencies
	var n int64
	url := at.HTTPAddr() + "/v1/volumes?type=csi"
	if stale {
		url += "&stale"
	}
	hc := &http.Client{Transport: c.transport}
	for range reps {
		start := time.Now()
		resp, err := hc.Get(url)
		if err != nil {
			return 0, nil, fmt.Errorf("loadtest: GET %s: %w", url, err)
		}
		n, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return 0, nil, fmt.Errorf("loadtest: GET %s: status %d, %v", url, resp.StatusCode, err)
		}
		wire = append(wire, time.Since(start))
	}
	return n, wire, nil
}

// VolumeCount is how many volumes server s has in its own state (a stale
// read).
func (c *Cluster) VolumeCount(s *Agent) (int, error) {
	vols, _, err := c.API(s).CSIVolumes().List(&api.QueryOptions{AllowStale: true})
	return len(vols), err
}

// WaitVolumeCount waits until every server has n volumes in its own
// state.
func (c *Cluster) WaitVolumeCount(n int, timeout time.Duration) {
	c.t.Helper()
	c.waitUntil(timeout, fmt.Sprintf("every server holding %d volumes", n), func() bool {
		for _, s := range c.Servers {
			if got, err := c.VolumeCount(s); err != nil || got != n {
				return false
			}
		}
		return true
	})
}
