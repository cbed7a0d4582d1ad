package snapshotfile

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func testMeta(size int) structs.SnapshotMeta {
	return structs.SnapshotMeta{ID: "2-40-1700000000000", Index: 40, Term: 2, RaftVersion: 1, Size: int64(size),
		CreateTime: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

// testFile writes a file of n bytes of seeded random state.
func testFile(t *testing.T, n int) ([]byte, []byte) {
	t.Helper()
	state := make([]byte, n)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	for i := range state {
		state[i] = byte(r.IntN(8)) // compressible, like msgpack rows
	}
	var buf bytes.Buffer
	must.NoError(t, Write(&buf, testMeta(n), bytes.NewReader(state)))
	return buf.Bytes(), state
}

// entries reads a file's entries as they are, without checking them.
func entries(t *testing.T, file []byte) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(file))
	must.NoError(t, err)
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		must.NoError(t, err)
		b, err := io.ReadAll(tr)
		must.NoError(t, err)
		out[hdr.Name] = b
	}
}

// pack writes entries as a gzip'd tar, in the order given.
func pack(t *testing.T, files ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		must.NoError(t, tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o600, Size: int64(len(f[1])), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(f[1]))
		must.NoError(t, err)
	}
	must.NoError(t, tw.Close())
	must.NoError(t, gz.Close())
	return buf.Bytes()
}

func TestSnapshotFile_RoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 100_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			file, state := testFile(t, n)
			var got bytes.Buffer
			meta, err := Read(bytes.NewReader(file), &got)
			must.NoError(t, err)
			want := testMeta(n)
			want.Format = Format
			must.Eq(t, want, *meta)
			must.Eq(t, len(state), got.Len())
			must.True(t, bytes.Equal(state, got.Bytes()))

			// The checksums are sha256sum's: an extracted copy checks too.
			e := entries(t, file)
			sum := sha256.Sum256(state)
			must.StrContains(t, string(e[SumsName]), fmt.Sprintf("%x  %s\n", sum[:], StateName))
		})
	}
}

func TestSnapshotFile_Read_Refusals(t *testing.T) {
	file, state := testFile(t, 50_000)
	good := entries(t, file)
	cases := []struct {
		name string
		data []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrNotSnapshot, "not gzip data"},
		{"json", []byte(`{"Nodes": []}`), ErrNotSnapshot, "not gzip data"},
		{"gzip of text", func() []byte {
			var b bytes.Buffer
			gz := gzip.NewWriter(&b)
			_, _ = gz.Write([]byte("hello, this is not a tar"))
			_ = gz.Close()
			return b.Bytes()
		}(), ErrCorrupt, "meta.json"},
		{"another tar.gz", pack(t, [2]string{"README", "hi"}), ErrNotSnapshot, `found the entry "README" where meta.json belongs`},
		{"truncated in the state", file[:len(file)/2], ErrCorrupt, "state.bin"},
		{"truncated in the trailer", file[:len(file)-4], ErrCorrupt, "gzip stream"},
		{"gzip header only", file[:12], ErrCorrupt, "meta.json"},
		{"state checksum", pack(t, [2]string{MetaName, string(good[MetaName])},
			[2]string{StateName, string(append([]byte{state[0] ^ 0xff}, state[1:]...))},
			[2]string{SumsName, string(good[SumsName])}), ErrChecksum, "state.bin has SHA-256"},
		{"meta checksum", pack(t, [2]string{MetaName, string(bytes.Replace(good[MetaName], []byte(`"Term": 2`), []byte(`"Term": 3`), 1))},
			[2]string{StateName, string(state)}, [2]string{SumsName, string(good[SumsName])}), ErrChecksum, "meta.json has SHA-256"},
		{"newer format", pack(t, [2]string{MetaName, `{"Format": 2, "Size": 0}`}), ErrFormat, "format 2"},
		{"state longer than meta says", pack(t, [2]string{MetaName, `{"Format": 1, "Size": 3}`}, [2]string{StateName, "abcd"}),
			ErrCorrupt, "state.bin is 4 bytes, meta.json says 3"},
		{"no sums", pack(t, [2]string{MetaName, string(good[MetaName])}, [2]string{StateName, string(state)}), ErrCorrupt, "ends before SHA256SUMS"},
		{"extra entry", pack(t, [2]string{MetaName, string(good[MetaName])}, [2]string{StateName, string(state)},
			[2]string{SumsName, string(good[SumsName])}, [2]string{"x", "y"}), ErrNotSnapshot, "an entry follows"},
		{"bad sums", pack(t, [2]string{MetaName, string(good[MetaName])}, [2]string{StateName, string(state)},
			[2]string{SumsName, "nonsense\n"}), ErrCorrupt, "is not"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.data), io.Discard)
			must.ErrorIs(t, err, tc.want)
			must.StrContains(t, err.Error(), tc.msg)
		})
	}
}

// TestSnapshotFile_Read_EveryTruncation: a file cut at any byte is
// refused, never read as a good one.
func TestSnapshotFile_Read_EveryTruncation(t *testing.T) {
	file, _ := testFile(t, 3000)
	for n := 0; n < len(file); n++ {
		_, err := Read(bytes.NewReader(file[:n]), io.Discard)
		must.Error(t, err, must.Sprintf("cut at %d of %d bytes", n, len(file)))
	}
}

func TestSnapshotFile_Write_ShortState(t *testing.T) {
	var buf bytes.Buffer
	err := Write(&buf, testMeta(10), bytes.NewReader([]byte("abc")))
	must.ErrorContains(t, err, "state.bin (10 bytes)")
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

func TestSnapshotFile_Read_StateWriterFails(t *testing.T) {
	file, _ := testFile(t, 1000)
	_, err := Read(bytes.NewReader(file), failWriter{})
	must.ErrorContains(t, err, "copy state.bin out: disk full")
}
