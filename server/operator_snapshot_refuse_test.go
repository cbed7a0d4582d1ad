package server_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/server/snapshotfile"
	"github.com/berth-csi/berth/structs"
)

// repack rewrites a snapshot file's entries, in order, after edit changes
// them; sums recomputes SHA256SUMS from the edited entries.
func repack(t *testing.T, file []byte, sums bool, edit func(name string, b []byte) []byte) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(file))
	must.NoError(t, err)
	tr := tar.NewReader(gz)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	hashes := map[string][32]byte{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		must.NoError(t, err)
		b, err := io.ReadAll(tr)
		must.NoError(t, err)
		b = edit(hdr.Name, b)
		if sums && hdr.Name == snapshotfile.SumsName {
			b = fmt.Appendf(nil, "%x  %s\n%x  %s\n", hashes[snapshotfile.MetaName], snapshotfile.MetaName,
				hashes[snapshotfile.StateName], snapshotfile.StateName)
		}
		hashes[hdr.Name] = sha256.Sum256(b)
		hdr.Size = int64(len(b))
		must.NoError(t, tw.WriteHeader(hdr))
		_, err = tw.Write(b)
		must.NoError(t, err)
	}
	must.NoError(t, tw.Close())
	must.NoError(t, zw.Close())
	return out.Bytes()
}

// stagedFiles lists what is left in s's snapshot staging directory.
func stagedFiles(t *testing.T, s *servertest.TestServer) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(s.Config.DataDir, "snapshot-staging", "*"))
	must.NoError(t, err)
	return names
}

// TestOperatorSnapshot_Restore_RefusesBadFiles: a file cut short, damaged,
// failing its checksums, of another kind or format, or whose state does
// not decode is a BadRequest saying which, the cluster's state is as it
// was, and nothing stays staged; the good file then restores.
func TestOperatorSnapshot_Restore_RefusesBadFiles(t *testing.T) {
	c := servertest.Cluster(t, 1, longTTL)
	s := c.Servers[0]
	seedSnapshotWorld(t, s)
	file, _ := saveSnapshot(t, s)
	registerVolume(t, s, "after-save", "hostpath")
	want := tables(t, s)

	flipState := func(name string, b []byte) []byte {
		if name == snapshotfile.StateName {
			b = append([]byte(nil), b...)
			b[len(b)/2] ^= 0xff
		}
		return b
	}
	damaged := append([]byte(nil), file...)
	damaged[len(damaged)/2] ^= 0xff
	cases := []struct {
		name string
		data []byte
		msg  string
	}{
		{"truncated", file[:len(file)*2/3], "cut short or damaged"},
		{"damaged", damaged, "nothing was changed"},
		{"checksum mismatch", repack(t, file, false, flipState), "its checksums do not match its content"},
		{"json", []byte(`{"Jobs": []}`), "it is not a berth snapshot file"},
		{"another tar.gz", repack(t, file, false, func(name string, b []byte) []byte {
			if name == snapshotfile.MetaName {
				return []byte("hello")
			}
			return b
		}), "meta.json does not decode"},
		{"newer format", repack(t, file, true, func(name string, b []byte) []byte {
			if name == snapshotfile.MetaName {
				return bytes.Replace(b, []byte(`"Format": 1`), []byte(`"Format": 9`), 1)
			}
			return b
		}), "its format is not one this version reads"},
		{"state that does not decode", repack(t, file, true, func(name string, b []byte) []byte {
			if name == snapshotfile.StateName {
				return bytes.Repeat([]byte{0xc1}, len(b)) // 0xc1: never used in msgpack
			}
			return b
		}), "its state is not one this version can restore"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := restoreSnapshot(t, s, tc.data, 1<<20)
			must.ErrorIs(t, err, structs.ErrBadRequest)
			must.StrContains(t, err.Error(), tc.msg)
			must.StrContains(t, err.Error(), "nothing was changed")
			must.Eq(t, want, tables(t, s), must.Sprint("a refused restore changed the state"))
			must.SliceEmpty(t, stagedFiles(t, s))
		})
	}

	// The chunks' own checks.
	var up structs.SnapshotUploadResponse
	must.NoError(t, call(t, s, "Operator.SnapshotUpload", &structs.SnapshotUploadRequest{Data: file[:10]}, &up))
	err := call(t, s, "Operator.SnapshotUpload", &structs.SnapshotUploadRequest{Handle: up.Handle, Offset: 20, Data: file[20:30]}, &up)
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), "send the chunks in order")
	err = call(t, s, "Operator.SnapshotUpload", &structs.SnapshotUploadRequest{Handle: up.Handle, Offset: 10}, &up)
	must.ErrorIs(t, err, structs.ErrBadRequest)
	err = call(t, s, "Operator.SnapshotRestore", &structs.SnapshotRestoreRequest{Handle: "no-such-upload"}, &structs.SnapshotRestoreResponse{})
	must.ErrorIs(t, err, structs.ErrNotFound)
	err = call(t, s, "Operator.SnapshotRead", &structs.SnapshotReadRequest{Handle: up.Handle}, &structs.SnapshotReadResponse{})
	must.ErrorIs(t, err, structs.ErrNotFound, must.Sprint("an upload is not read back"))

	// The good file restores, and drops what was written after it.
	resp, err := restoreSnapshot(t, s, file, 1<<20)
	must.NoError(t, err)
	must.SliceEmpty(t, resp.MissingRootKeys)
	vol, err := s.State().CSIVolumeByID(nil, structs.DefaultNamespace, "after-save")
	must.NoError(t, err)
	must.Nil(t, vol)
	vol, err = s.State().CSIVolumeByID(nil, structs.DefaultNamespace, "data")
	must.NoError(t, err)
	must.NotNil(t, vol)
	must.SliceLen(t, 1, stagedFiles(t, s), must.Sprint("the unfinished upload above stays until it expires"))
	_, err = os.Stat(stagedFiles(t, s)[0])
	must.NoError(t, err)
}
