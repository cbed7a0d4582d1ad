package command

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/berth-csi/berth/cmd/berth/internal/spec"
	"github.com/berth-csi/berth/structs"
)

var volumeCreateCommand = &command{
	name:     "volume create",
	synopsis: "Create a CSI volume through its plugin",
	help: `[options] <file>

  Create a new volume in the storage provider through a controller of the
  volume's CSI plugin, then register it, from a volume spec in HCL or JSON
  (see "Specs" in the documentation). The plugin makes the volume and its
  external ID, so the spec must not set external_id; to add a volume that
  already exists, use "berth volume register".

  capacity_min and capacity_max bound the volume's size; snapshot_id or
  clone_id (not both) name a snapshot to restore or a volume to clone;
  topology_request says where the volume must be reachable; secrets are
  passed to the plugin. The command prints progress until the plugin has
  made the volume or failed. If <file> is "-", the spec is read from
  standard input.
`,
	run: runVolumeCreate,
}

// createProgressEvery is how often volume create says it is still waiting.
var createProgressEvery = 10 * time.Second

func runVolumeCreate(ctx context.Context, m *meta, args []string) int {
	vol, c, status := m.specCommand(ctx, args, spec.ForCreate)
	if vol == nil {
		return status
	}
	fmt.Fprintf(m.stdout, "==> Creating volume %q with plugin %q...\n", vol.ID, vol.PluginID)
	stop := m.progress(createProgressEvery, func(elapsed time.Duration) string {
		return fmt.Sprintf("    Still waiting for plugin %q to create %q (%s)", vol.PluginID, vol.ID, elapsed)
	})
	created, _, err := c.CSIVolumes().Create(vol)
	stop()
	if err != nil {
		return m.fail("%s", apiError("create volume "+strconv.Quote(vol.ID), err))
	}
	if len(created) == 0 {
		fmt.Fprintf(m.stdout, "    Created %q\n", vol.ID)
		return exitOK
	}
	for _, v := range created {
		fmt.Fprintf(m.stdout, "    Created %q: external ID %s, %s\n", v.ID, orNone(v.ExternalID), capacityText(v))
	}
	return exitOK
}

// capacityText shows a created volume's capacity; plugins may not report one.
func capacityText(v *structs.CSIVolume) string {
	if v.Capacity <= 0 {
		return "capacity not reported by the plugin"
	}
	return "capacity " + humanBytes(v.Capacity)
}

// progress prints line(elapsed) every interval until the returned stop is
// called; stop returns once nothing more will be printed.
func (m *meta) progress(interval time.Duration, line func(elapsed time.Duration) string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				fmt.Fprintln(m.stdout, line(time.Since(start).Round(time.Second)))
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

var volumeDeleteCommand = &command{
	name:     "volume delete",
	synopsis: "Delete a CSI volume in its storage provider",
	help: `[options] <volume>

  Delete a volume in the storage provider through a controller of its CSI
  plugin, then deregister it. The volume's data is gone. The volume may be
  given by a unique prefix of its ID. To forget a volume but keep it in
  the provider, use "berth volume deregister".

Delete Options:

  -secret <key>=<value>
    A secret for the plugin's delete call, such as a credential. Repeat it
    for several. Secrets given here replace those the volume was
    registered with. Values may hold '=' but not ','.
`,
	run: runVolumeDelete,
}

func runVolumeDelete(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	secrets := m.defineSecrets(fs)
	pos, status, ok := m.parse(fs, args, 1, 1)
	if !ok {
		return status
	}
	c, id, code := volumeStatus.connect(ctx, m, pos[0])
	if c == nil {
		return code
	}
	if _, err := c.CSIVolumes().Delete(id, secrets.m); err != nil {
		return m.fail("%s", apiError("delete volume "+strconv.Quote(id), err))
	}
	fmt.Fprintf(m.stdout, "Deleted volume %q\n", id)
	return exitOK
}
