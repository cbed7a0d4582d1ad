package loadtest

import (
	"context"
	"fmt"
	"sync"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/structs"
)

// Pool holds storage volumes made in the mock driver and not registered
// in berth: a register must name one (the mock confirms the capabilities
// of volumes it made, and no other), and no two berth volumes may share
// one.
type Pool struct {
	mu  sync.Mutex
	ids []string // the mock's volume IDs
}

// Take removes a storage volume from the pool; ok is false when it is
// empty.
func (p *Pool) Take() (id string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ids) == 0 {
		return "", false
	}
	id = p.ids[len(p.ids)-1]
	p.ids = p.ids[:len(p.ids)-1]
	return id, true
}

// Put returns storage volumes to the pool (their berth volumes were
// deregistered).
func (p *Pool) Put(ids ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids = append(p.ids, ids...)
}

// Len is how many storage volumes the pool holds.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ids)
}

// makeCallers is how many CreateVolume calls MakePool has in flight.
const makeCallers = 8

// MakePool creates n storage volumes in the mock driver, calling its
// controller socket directly (not through berth: this is setup, not a
// figure). The mock finds a volume by a linear scan of the ones it made,
// so the volumes made first are the cheapest to look up later: make the
// pool of the measured registers before the bulk of the fill.
func (c *Cluster) MakePool(ctx context.Context, n int) (*Pool, error) {
	cc, err := csi.Dial(ctx, c.Mock.Socket, nil, csi.WithPluginID(PluginID))
	if err != nil {
		return nil, fmt.Errorf("loadtest: dial the mock driver: %w", err)
	}
	defer cc.Close()
	ids := make([]string, n)
	caps := []*structs.CSIVolumeCapability{volumeCapability}
	_, err = runCount(makeCallers, n, func(i int) error {
		resp, err := cc.CreateVolume(ctx, &csi.CreateVolumeRequest{
			Name: fmt.Sprintf("lt-ext-%d", c.extSeq.Add(1)), Capabilities: caps})
		if err != nil {
			return fmt.Errorf("loadtest: create a storage volume in the mock driver: %w", err)
		}
		ids[i] = resp.ExternalVolumeID
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Taken from the end: the first made is the first taken.
	for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
		ids[i], ids[j] = ids[j], ids[i]
	}
	return &Pool{ids: ids}, nil
}

// volumeCapability is what every volume of the run asks for.
var volumeCapability = &structs.CSIVolumeCapability{
	AccessMode:     structs.CSIVolumeAccessModeSingleNodeWriter,
	AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
}
