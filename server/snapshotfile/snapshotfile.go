package snapshotfile

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"

	"github.com/berth-csi/berth/structs"
)

// Format is the layout version this package writes and reads. A file of
// another version is refused with ErrFormat.
const Format = 1

// Entry names, in the order they appear in the file.
const (
	MetaName  = "meta.json"
	StateName = "state.bin"
	SumsName  = "SHA256SUMS"
)

const (
	maxMetaSize = 64 << 10
	maxSumsSize = 4 << 10
	// MaxStateSize bounds the state a file may hold once decompressed,
	// so a small file cannot make a reader write without end.
	MaxStateSize int64 = 8 << 30
)

// Errors of Read; each wraps what was found.
var (
	ErrNotSnapshot = errors.New("snapshotfile: not a berth snapshot file")
	ErrCorrupt     = errors.New("snapshotfile: the snapshot file is cut short or damaged")
	ErrChecksum    = errors.New("snapshotfile: checksum mismatch")
	ErrFormat      = errors.New("snapshotfile: snapshot file format not known to this version")
)

// Write writes a snapshot file of meta (its Format is set here) and the
// first meta.Size bytes of state to w. A state shorter than meta.Size is
// an error.
func Write(w io.Writer, meta structs.SnapshotMeta, state io.Reader) error {
	meta.Format = Format
	if meta.Size < 0 || meta.Size > MaxStateSize {
		return fmt.Errorf("snapshotfile: state of %d bytes (at most %d)", meta.Size, MaxStateSize)
	}
	mb, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return fmt.Errorf("snapshotfile: encode meta: %w", err)
	}
	mb = append(mb, '\n')
	mtime := meta.CreateTime.UTC().Truncate(time.Second)
	header := func(name string, size int64) *tar.Header {
		return &tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: mtime, Typeflag: tar.TypeReg}
	}

	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(header(MetaName, int64(len(mb)))); err != nil {
		return fmt.Errorf("snapshotfile: write %s: %w", MetaName, err)
	}
	if _, err := tw.Write(mb); err != nil {
		return fmt.Errorf("snapshotfile: write %s: %w", MetaName, err)
	}
	if err := tw.WriteHeader(header(StateName, meta.Size)); err != nil {
		return fmt.Errorf("snapshotfile: write %s: %w", StateName, err)
	}
	sh := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(tw, sh), state, meta.Size); err != nil {
		return fmt.Errorf("snapshotfile: write %s (%d bytes): %w", StateName, meta.Size, err)
	}
	msum := sha256.Sum256(mb)
	sums := fmt.Sprintf("%x  %s\n%x  %s\n", msum[:], MetaName, sh.Sum(nil), StateName)
	if err := tw.WriteHeader(header(SumsName, int64(len(sums)))); err != nil {
		return fmt.Errorf("snapshotfile: write %s: %w", SumsName, err)
	}
	if _, err := io.WriteString(tw, sums); err != nil {
		return fmt.Errorf("snapshotfile: write %s: %w", SumsName, err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("snapshotfile: close tar: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("snapshotfile: close gzip: %w", err)
	}
	return nil
}

// Read reads a snapshot file from r, copying its state to state as it
// goes, and checks it whole: its layout, its format, the state's length,
// and the checksums of meta.json and state.bin. What it copied to state
// may be used only when it returns no error.
func Read(r io.Reader, state io.Writer) (*structs.SnapshotMeta, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return nil, fmt.Errorf("%w: it is not gzip data (a snapshot file is a gzip'd tar that `berth operator snapshot save` writes)", ErrNotSnapshot)
	}
	gz, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%w: gzip header: %v", ErrCorrupt, err)
	}
	tr := tar.NewReader(gz)

	mb, err := readEntry(tr, MetaName, maxMetaSize, io.Discard)
	if err != nil {
		return nil, err
	}
	var meta structs.SnapshotMeta
	if err := json.Unmarshal(mb, &meta); err != nil {
		return nil, fmt.Errorf("%w: %s does not decode: %v", ErrNotSnapshot, MetaName, err)
	}
	if meta.Format != Format {
		return nil, fmt.Errorf("%w: the file is format %d, this version reads format %d", ErrFormat, meta.Format, Format)
	}
	if meta.Size < 0 || meta.Size > MaxStateSize {
		return nil, fmt.Errorf("%w: %s says the state is %d bytes (at most %d)", ErrCorrupt, MetaName, meta.Size, MaxStateSize)
	}

	sh := sha256.New()
	if _, err := readEntry(tr, StateName, meta.Size, hashingWriter{state, sh}); err != nil {
		return nil, err
	}
	sb, err := readEntry(tr, SumsName, maxSumsSize, io.Discard)
	if err != nil {
		return nil, err
	}
	if _, err := tr.Next(); !errors.Is(err, io.EOF) {
		if err == nil {
			return nil, fmt.Errorf("%w: an entry follows %s", ErrNotSnapshot, SumsName)
		}
		return nil, fmt.Errorf("%w: after %s: %v", ErrCorrupt, SumsName, err)
	}
	// Read to the end of the gzip stream: its CRC is checked there.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return nil, fmt.Errorf("%w: gzip stream: %v", ErrCorrupt, err)
	}

	want, err := parseSums(sb)
	if err != nil {
		return nil, err
	}
	msum := sha256.Sum256(mb)
	if got := hex.EncodeToString(msum[:]); got != want[MetaName] {
		return nil, fmt.Errorf("%w: %s has SHA-256 %s, %s says %s", ErrChecksum, MetaName, got, SumsName, want[MetaName])
	}
	if got := hex.EncodeToString(sh.Sum(nil)); got != want[StateName] {
		return nil, fmt.Errorf("%w: %s has SHA-256 %s, %s says %s", ErrChecksum, StateName, got, SumsName, want[StateName])
	}
	return &meta, nil
}

// readEntry reads the next entry, which must be name and a regular file
// of at most limit bytes (exactly limit for the state), copying it to w;
// the meta and sums entries are returned as well.
func readEntry(tr *tar.Reader, name string, limit int64, w io.Writer) ([]byte, error) {
	hdr, err := tr.Next()
	switch {
	case errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%w: the file ends before %s", ErrCorrupt, name)
	case err != nil:
		return nil, fmt.Errorf("%w: reading the entry %s: %v", ErrCorrupt, name, err)
	case hdr.Name != name || hdr.Typeflag != tar.TypeReg:
		return nil, fmt.Errorf("%w: found the entry %q where %s belongs", ErrNotSnapshot, hdr.Name, name)
	}
	if name == StateName && hdr.Size != limit {
		return nil, fmt.Errorf("%w: %s is %d bytes, %s says %d", ErrCorrupt, StateName, hdr.Size, MetaName, limit)
	}
	if hdr.Size > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes (at most %d)", ErrNotSnapshot, name, hdr.Size, limit)
	}
	var buf bytes.Buffer
	dst := w
	if name != StateName {
		dst = &buf
	}
	n, err := io.Copy(dst, tr)
	if err != nil {
		var hw hashingWriterError
		if errors.As(err, &hw) {
			return nil, fmt.Errorf("snapshotfile: copy %s out: %w", name, hw.err)
		}
		return nil, fmt.Errorf("%w: reading %s: %v", ErrCorrupt, name, err)
	}
	if n != hdr.Size {
		return nil, fmt.Errorf("%w: %s holds %d of its %d bytes", ErrCorrupt, name, n, hdr.Size)
	}
	return buf.Bytes(), nil
}

// parseSums reads SHA256SUMS: "<hex>  <name>" lines for both entries.
func parseSums(b []byte) (map[string]string, error) {
	sums := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 2*sha256.Size {
			return nil, fmt.Errorf("%w: %s line %q is not \"<sha256>  <name>\"", ErrCorrupt, SumsName, line)
		}
		sums[name] = strings.ToLower(sum)
	}
	for _, name := range []string{MetaName, StateName} {
		if sums[name] == "" {
			return nil, fmt.Errorf("%w: %s has no checksum of %s", ErrCorrupt, SumsName, name)
		}
	}
	return sums, nil
}

// hashingWriter copies to w and hashes what it copied; a failure of w is
// told apart from a failure to read the file.
type hashingWriter struct {
	w io.Writer
	h hash.Hash
}

type hashingWriterError struct{ err error }

func (e hashingWriterError) Error() string { return e.err.Error() }

func (hw hashingWriter) Write(p []byte) (int, error) {
	n, err := hw.w.Write(p)
	hw.h.Write(p[:n])
	if err != nil {
		return n, hashingWriterError{err}
	}
	return n, nil
}
