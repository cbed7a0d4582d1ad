package command

import (
	"context"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

var volumeSnapshotCreateCommand = &command{
	name:     "volume snapshot create",
	synopsis: "Snapshot a CSI volume through its plugin",
	help: `[options] <volume> [<name>]

  Have a controller of the volume's CSI plugin take a snapshot of it. The
  volume may be given by a unique prefix of its ID. <name> identifies the
  snapshot to the plugin: asking again with the same name gives back the
  same snapshot rather than taking another. Without one, berth names the
  snapshot after the volume and the time. The command prints progress
  until the plugin has taken the snapshot or failed.

  To restore a snapshot, give its ID as snapshot_id in a volume spec for
  "berth volume create".

Snapshot Create Options:

  -secret <key>=<value>
    A secret for the plugin's snapshot call, such as a credential. Repeat
    it for several. Secrets given here replace those the volume was
    registered with. Values may hold '=' but not ','.

  -parameter <key>=<value>
    A parameter for the plugin's snapshot call, as the plugin documents
    them. Repeat it for several.

  -json
    Print the snapshot's JSON only, without progress.
`,
	run: runVolumeSnapshotCreate,
}

// snapshotProgressEvery is how often volume snapshot create says it is
// still waiting.
var snapshotProgressEvery = 10 * time.Second

func runVolumeSnapshotCreate(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	secrets := m.defineSecrets(fs)
	params := mapFlag{name: "parameter"}
	fs.Var(&params, "parameter", "")
	asJSON := fs.Bool("json", false, "")
	pos, status, ok := m.parse(fs, args, 1, 2)
	if !ok {
		return status
	}
	name := ""
	if len(pos) == 2 {
		name = pos[1]
	}
	c, err := m.client(ctx)
	if err != nil {
		return m.fail("%v", err)
	}
	vol, err := volumeStatus.find(c, pos[0])
	if err != nil {
		return m.fail("%s", err)
	}

	stop := func() {}
	if !*asJSON {
		fmt.Fprintf(m.stdout, "==> Snapshotting volume %q with plugin %q...\n", vol.ID, vol.PluginID)
		stop = m.progress(snapshotProgressEvery, func(elapsed time.Duration) string {
			return fmt.Sprintf("    Still waiting for plugin %q to snapshot %q (%s)", vol.PluginID, vol.ID, elapsed)
		})
	}
	start := time.Now()
	snap, _, err := c.CSIVolumes().CreateSnapshot(vol.ID, name, params.m, secrets.m)
	took := roundDuration(time.Since(start))
	stop()
	if err != nil {
		return m.fail("%s", apiError("snapshot volume "+strconv.Quote(vol.ID), err))
	}
	if *asJSON {
		return m.printValue(snap)
	}

	fmt.Fprintf(m.stdout, "    Snapshot %q taken in %s\n\n", snap.ID, took)
	kv(m.stdout, [][2]string{
		{"Snapshot ID", snap.ID},
		{"Plugin ID", orNone(snap.PluginID)},
		{"Name", orNone(snap.Name)},
		{"Source Volume", snapshotSourceLong(snap)},
		{"Size", sizeOrUnknown(snap.SizeBytes)},
		{"Created", timeOrUnknown(snap.CreateTime)},
		{"Ready", strconv.FormatBool(snap.IsReady)},
	})
	fmt.Fprintf(m.stdout, "\nRestore it with snapshot_id = %q in a volume spec for \"berth volume create\"\n", snap.ID)
	if !snap.IsReady {
		plugin := snap.PluginID
		if plugin == "" {
			plugin = vol.PluginID
		}
		fmt.Fprintf(m.stdout, "The plugin has not made it ready yet; \"berth volume snapshot list -plugin %s\" shows when it is\n", plugin)
	}
	return exitOK
}

var volumeSnapshotListCommand = &command{
	name:     "volume snapshot list",
	synopsis: "List the snapshots CSI plugins hold",
	help: `[options]

  List the snapshots that CSI plugins report: those of one plugin with
  -plugin, else of every plugin that can list them. Without -per-page,
  every page is read and shown as one table; with it, one page is shown,
  followed by the -page-token to give for the next.

  The source volume is berth's ID of the volume the snapshot was taken
  from, or "ext:" and the plugin's ID of a volume berth does not know.

Snapshot List Options:

  -plugin <id>
    Only the snapshots of this plugin, given by a unique prefix of its ID.

  -per-page <n>
    Show one page of at most n snapshots.

  -page-token <token>
    Start at the page of this token, as a previous page printed it.

  -secret <key>=<value>
    A secret for the plugins' list calls, such as a credential. Repeat it
    for several. Values may hold '=' but not ','.

  -json
    Print the API's JSON, {"Snapshots": [...], "NextToken": "..."}; without
    -per-page, the snapshots of every page together.
`,
	run: runVolumeSnapshotList,
}

func runVolumeSnapshotList(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	pluginArg := fs.String("plugin", "", "")
	perPage := fs.Int("per-page", 0, "")
	pageToken := fs.String("page-token", "", "")
	secrets := m.defineSecrets(fs)
	asJSON := fs.Bool("json", false, "")
	if _, status, ok := m.parse(fs, args, 0, 0); !ok {
		return status
	}
	paged := isSet(fs, "per-page")
	if paged && (*perPage < 1 || *perPage > math.MaxInt32) {
		return m.usageError("-per-page %d: give a number of snapshots from 1 to %d, or leave -per-page out to list them all", *perPage, math.MaxInt32)
	}
	c, err := m.client(ctx)
	if err != nil {
		return m.fail("%v", err)
	}
	pluginID := ""
	doing := "list snapshots"
	if *pluginArg != "" {
		if pluginID, err = pluginStatus.resolve(c, *pluginArg); err != nil {
			return m.fail("%s", err)
		}
		doing += " of plugin " + strconv.Quote(pluginID)
	}

	fetch := func(token string) ([]*structs.CSISnapshot, string, error) {
		page, _, err := c.CSIVolumes().ListSnapshots(pluginID, int32(*perPage), token, secrets.m, nil)
		if err != nil {
			return nil, "", err
		}
		return page.Snapshots, page.NextToken, nil
	}
	var list api.CSISnapshotList
	if paged {
		list.Snapshots, list.NextToken, err = fetch(*pageToken)
	} else {
		list.Snapshots, err = allPages(*pageToken, fetch, nil)
	}
	if err != nil {
		return m.fail("%s", apiError(doing, err))
	}
	list.Snapshots = nonNilSnapshots(list.Snapshots)

	if *asJSON {
		return m.printValue(&list)
	}
	m.snapshotTable(list.Snapshots)
	if paged && list.NextToken != "" {
		fmt.Fprintf(m.stdout, "\nMore snapshots follow: for the next page, run the same command with -page-token %s\n",
			shellQuote(list.NextToken))
	}
	return exitOK
}

func (m *meta) snapshotTable(snaps []*structs.CSISnapshot) {
	if len(snaps) == 0 {
		m.println("No snapshots")
		return
	}
	rows := make([][]string, 0, len(snaps))
	external := false
	for _, s := range snaps {
		external = external || s.SourceVolumeID == "" && s.ExternalSourceVolumeID != ""
		rows = append(rows, []string{s.ID, orNone(s.PluginID), snapshotSource(s), sizeOrUnknown(s.SizeBytes),
			timeOrUnknown(s.CreateTime), strconv.FormatBool(s.IsReady)})
	}
	table(m.stdout, []string{"Snapshot ID", "Plugin ID", "Source Volume", "Size", "Created", "Ready"}, rows)
	if external {
		m.println(`(ext:<id> is a source volume berth does not know, by the plugin's ID of it)`)
	}
}

var volumeSnapshotDeleteCommand = &command{
	name:     "volume snapshot delete",
	synopsis: "Delete a snapshot through its CSI plugin",
	help: `[options] <plugin> <snapshot>

  Delete a snapshot in the storage provider through a controller of the
  CSI plugin that holds it. The plugin may be given by a unique prefix of
  its ID; the snapshot by its full ID, as "berth volume snapshot list"
  shows it.

Snapshot Delete Options:

  -secret <key>=<value>
    A secret for the plugin's delete call, such as a credential. Repeat it
    for several. Values may hold '=' but not ','.
`,
	run: runVolumeSnapshotDelete,
}

func runVolumeSnapshotDelete(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	secrets := m.defineSecrets(fs)
	pos, status, ok := m.parse(fs, args, 2, 2)
	if !ok {
		return status
	}
	c, pluginID, code := pluginStatus.connect(ctx, m, pos[0])
	if c == nil {
		return code
	}
	snapshotID := pos[1]
	if _, err := c.CSIVolumes().DeleteSnapshot(pluginID, snapshotID, secrets.m); err != nil {
		return m.fail("%s", apiError(fmt.Sprintf("delete snapshot %q of plugin %q", snapshotID, pluginID), err))
	}
	fmt.Fprintf(m.stdout, "Deleted snapshot %q of plugin %q\n", snapshotID, pluginID)
	return exitOK
}

// snapshotSource shows the snapshot's source volume in a table: berth's
// ID, else the plugin's marked "ext:", else (unknown).
func snapshotSource(s *structs.CSISnapshot) string {
	switch {
	case s.SourceVolumeID != "":
		return s.SourceVolumeID
	case s.ExternalSourceVolumeID != "":
		return "ext:" + s.ExternalSourceVolumeID
	}
	return "(unknown)"
}

// snapshotSourceLong shows the source volume with both IDs.
func snapshotSourceLong(s *structs.CSISnapshot) string {
	switch {
	case s.SourceVolumeID != "" && s.ExternalSourceVolumeID != "":
		return fmt.Sprintf("%s (external ID %s)", s.SourceVolumeID, s.ExternalSourceVolumeID)
	case s.SourceVolumeID != "":
		return s.SourceVolumeID
	case s.ExternalSourceVolumeID != "":
		return fmt.Sprintf("external ID %s (unknown to berth)", s.ExternalSourceVolumeID)
	}
	return "(unknown)"
}

// roundDuration keeps a duration readable: milliseconds, or microseconds
// below one.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// sizeOrUnknown shows a size a plugin may not report (0).
func sizeOrUnknown(n int64) string {
	if n <= 0 {
		return "unknown"
	}
	return humanBytes(n)
}

// timeOrUnknown shows a time a plugin may not report (zero).
func timeOrUnknown(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return formatTime(t)
}

func nonNilSnapshots(s []*structs.CSISnapshot) []*structs.CSISnapshot {
	out := make([]*structs.CSISnapshot, 0, len(s))
	for _, x := range s {
		if x != nil {
			out = append(out, x)
		}
	}
	return out
}

// isSet reports whether the flag name was given.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// shellQuote quotes s for a POSIX shell unless it needs none.
func shellQuote(s string) string {
	plain := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-_.:/=+@%,", r))
	}) < 0
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
