package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/berth-csi/berth/fsm"
	"github.com/berth-csi/berth/server/snapshotfile"
	"github.com/berth-csi/berth/structs"
)

var operatorSnapshotSaveCommand = &command{
	name:     "operator snapshot save",
	synopsis: "Save a snapshot of the cluster's state to a file",
	help: `[options] FILE

  Save a snapshot of the cluster's whole state to FILE: every node, job,
  allocation, CSI plugin and volume (with its claims), the ACL policies
  and tokens, and the root keys' metadata, as the leader holds them now.
  The file is a gzip'd tar of meta.json, state.bin and SHA256SUMS. It is
  checked once downloaded, and only a whole file is written to FILE (an
  existing FILE is replaced).

  The file holds no root key material and no secret in clear: volume
  secrets stay sealed under the root keys, tokens and node secrets are
  kept as hashes. To open the volume secrets after a restore into another
  cluster, back up a server's keystore/ too (see docs/operations.md).

  With ACLs on, this needs a management token.
`,
	run: runSnapshotSave,
}

func runSnapshotSave(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	pos, status, ok := m.parse(fs, args, 1, 1)
	if !ok {
		return status
	}
	path := pos[0]
	c, err := m.client(ctx)
	if err != nil {
		return m.fail("%v", err)
	}
	body, _, err := c.Operator().SnapshotSave()
	if err != nil {
		return m.fail("%s", apiError("save a snapshot", err))
	}
	defer body.Close()
	meta, size, err := writeSnapshotFile(path, body)
	if err != nil {
		return m.fail("save a snapshot: %v; nothing was written to %s: run the command again", err, path)
	}
	fmt.Fprintf(m.stdout, "Saved snapshot of index %d (term %d, %s) to %s\n", meta.Index, meta.Term, humanBytes(size), path)
	return exitOK
}

// writeSnapshotFile copies a downloaded snapshot to a temporary file next
// to path, checks it whole, and only then renames it to path.
func writeSnapshotFile(path string, body io.Reader) (meta *structs.SnapshotMeta, size int64, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return nil, 0, fmt.Errorf("create a file next to %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if size, err = io.Copy(tmp, body); err != nil {
		return nil, 0, fmt.Errorf("the download was cut short after %d bytes (%w)", size, err)
	}
	if _, err = tmp.Seek(0, io.SeekStart); err != nil {
		return nil, 0, err
	}
	if meta, err = snapshotfile.Read(tmp, io.Discard); err != nil {
		return nil, 0, fmt.Errorf("the downloaded file does not check: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return nil, 0, err
	}
	if err = tmp.Close(); err != nil {
		return nil, 0, err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return nil, 0, err
	}
	return meta, size, nil
}

var operatorSnapshotRestoreCommand = &command{
	name:     "operator snapshot restore",
	synopsis: "Replace the cluster's state with a snapshot file",
	help: `[options] FILE

  Replace the cluster's whole state with the snapshot in FILE, on every
  server: meant to bring a lost cluster back into fresh servers. The file
  is checked here, then whole by the leader, before anything changes; a
  file cut short, damaged or of another kind is refused and the cluster is
  left as it was.

  After a restore the cluster holds the snapshot's ACL tokens (the token
  used here may be gone: use one of the snapshot's cluster), and a node
  whose client does not heartbeat to this cluster is marked down after its
  TTL, which releases its claims. Volume secrets open only on servers that
  hold the root keys' files: the restore lists the keys the leader lacks.

  With ACLs on, this needs a management token.

Restore Options:

  -json
    Print the API's JSON.
`,
	run: runSnapshotRestore,
}

func runSnapshotRestore(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	asJSON := fs.Bool("json", false, "")
	pos, status, ok := m.parse(fs, args, 1, 1)
	if !ok {
		return status
	}
	path := pos[0]
	f, err := os.Open(path)
	if err != nil {
		return m.fail("restore a snapshot: %v", err)
	}
	defer f.Close()
	if _, err := snapshotfile.Read(f, io.Discard); err != nil {
		return m.fail("restore a snapshot: %s is refused: %v; nothing was sent", path, err)
	}
	c, err := m.client(ctx)
	if err != nil {
		return m.fail("%v", err)
	}
	resp, _, err := c.Operator().SnapshotRestore(f)
	if err != nil {
		return m.fail("%s", apiError("restore a snapshot", err))
	}
	if *asJSON {
		return m.printValue(resp)
	}
	if resp.Meta != nil {
		fmt.Fprintf(m.stdout, "Restored the snapshot of index %d (saved %s) at raft index %d\n\n",
			resp.Meta.Index, formatTime(resp.Meta.CreateTime), resp.Index)
	}
	snapshotTables(m, resp.Tables)
	for _, id := range resp.MissingRootKeys {
		fmt.Fprintf(m.stderr, "Warning: the leader lacks the material of root key %s, which sealed secrets in the snapshot: "+
			"copy keystore/%s.json from a server of the snapshot's cluster into a server's <data_dir>/server/keystore/ "+
			"(mode 0600) and restart that server; or make a new key (`berth operator root keyring rotate`) and register "+
			"the volumes sealed under the old one again with their secrets\n", id, id)
	}
	return exitOK
}

var operatorSnapshotInspectCommand = &command{
	name:     "operator snapshot inspect",
	synopsis: "Check a snapshot file and count what it holds",
	help: `[options] FILE

  Check a snapshot file (its layout and SHA-256 checksums, and that its
  state decodes) and show its metadata and how many rows of each table it
  holds. It reads the file only: no agent is asked.

Inspect Options:

  -json
    Print the metadata and counts as JSON.
`,
	run: runSnapshotInspect,
}

// snapshotInspection is inspect's -json.
type snapshotInspection struct {
	Meta   *structs.SnapshotMeta
	Tables []*structs.SnapshotTableCount
}

func runSnapshotInspect(_ context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	asJSON := fs.Bool("json", false, "")
	pos, status, ok := m.parse(fs, args, 1, 1)
	if !ok {
		return status
	}
	path := pos[0]
	f, err := os.Open(path)
	if err != nil {
		return m.fail("inspect a snapshot: %v", err)
	}
	defer f.Close()
	meta, info, err := inspectSnapshotFile(f)
	if err != nil {
		return m.fail("inspect a snapshot: %s: %v", path, err)
	}
	if *asJSON {
		return m.printValue(snapshotInspection{Meta: meta, Tables: info.Tables})
	}
	kv(m.stdout, [][2]string{
		{"ID", meta.ID},
		{"Index", strconv.FormatUint(meta.Index, 10)},
		{"Term", strconv.FormatUint(meta.Term, 10)},
		{"Saved", formatTime(meta.CreateTime)},
		{"Format", strconv.Itoa(meta.Format)},
		{"State Size", humanBytes(meta.Size)},
		{"Checksums", "ok (SHA-256)"},
	})
	fmt.Fprintln(m.stdout)
	snapshotTables(m, info.Tables)
	return exitOK
}

// inspectSnapshotFile checks the file and decodes its state as it reads
// it, without a copy on disk: the state streams through a pipe into the
// FSM's decoder. A file that fails its checks is reported as such before
// any decoding error.
func inspectSnapshotFile(r io.Reader) (*structs.SnapshotMeta, *fsm.SnapshotInfo, error) {
	pr, pw := io.Pipe()
	type result struct {
		info *fsm.SnapshotInfo
		err  error
	}
	done := make(chan result, 1)
	go func() {
		info, err := fsm.InspectSnapshot(pr)
		// Read on, so that the file's checks finish whatever the decoder
		// thought of the state.
		_, _ = io.Copy(io.Discard, pr)
		done <- result{info, err}
	}()
	meta, err := snapshotfile.Read(r, pw)
	pw.CloseWithError(err)
	res := <-done
	if err != nil {
		return nil, nil, err
	}
	if res.err != nil {
		return nil, nil, fmt.Errorf("its checksums hold, but its state does not decode: %w", res.err)
	}
	return meta, res.info, nil
}

// snapshotTables prints the rows of each table.
func snapshotTables(m *meta, tables []*structs.SnapshotTableCount) {
	rows := make([][]string, 0, len(tables))
	for _, t := range tables {
		rows = append(rows, []string{t.Table, strconv.Itoa(t.Rows)})
	}
	table(m.stdout, []string{"Table", "Rows"}, rows)
}
