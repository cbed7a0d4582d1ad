package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/berth-csi/berth/structs"
)

// snapshotContentType is the type of an operator snapshot file: a gzip'd
// tar (server/snapshotfile).
const snapshotContentType = "application/gzip"

// operatorSnapshotRoutes registers the cluster state backup: GET saves a
// snapshot file, PUT restores one. Both need a management token; the
// servers check it, on the leader, where the file is staged.
func (h *handler) operatorSnapshotRoutes() {
	h.handle("/v1/operator/snapshot", route{
		http.MethodGet: h.operatorSnapshotSave,
		http.MethodPut: h.operatorSnapshotRestore,
	})
}

// GET /v1/operator/snapshot: the snapshot file, streamed as the leader
// hands it out chunk by chunk, with its length (Content-Length) and raft
// index (X-Berth-Index). A failure after the first bytes cuts the answer
// short, which the length tells the client; so does the file's checksum.
func (h *handler) operatorSnapshotSave(w http.ResponseWriter, r *http.Request) error {
	var save structs.SnapshotSaveResponse
	if err := h.rpc(r, "Operator.SnapshotSave", &structs.SnapshotSaveRequest{}, &save); err != nil {
		return err
	}
	// The first chunk comes before the headers: failing to read it is
	// still an error answer.
	chunk, err := h.readSnapshotChunk(r, save.Handle, 0)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", snapshotContentType)
	w.Header().Set("Content-Length", strconv.FormatInt(save.Size, 10))
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="berth-snapshot-%d.snap"`, save.Index))
	setIndex(w, save.Index)
	w.WriteHeader(http.StatusOK)
	var sent int64
	for {
		if _, err := w.Write(chunk.Data); err != nil {
			return nil // the client went away; the staged file expires
		}
		sent += int64(len(chunk.Data))
		if chunk.EOF {
			return nil
		}
		if chunk, err = h.readSnapshotChunk(r, save.Handle, sent); err != nil {
			h.logger.Error("operator snapshot: download cut short", "sent", sent, "size", save.Size, "error", err)
			panic(http.ErrAbortHandler) // the client sees fewer bytes than Content-Length
		}
	}
}

func (h *handler) readSnapshotChunk(r *http.Request, handle string, offset int64) (*structs.SnapshotReadResponse, error) {
	var chunk structs.SnapshotReadResponse
	if err := h.rpc(r, "Operator.SnapshotRead", &structs.SnapshotReadRequest{Handle: handle, Offset: offset}, &chunk); err != nil {
		return nil, err
	}
	if len(chunk.Data) == 0 && !chunk.EOF {
		return nil, structs.NewError(structs.CodeInternal, "operator snapshot: the leader answered an empty chunk at offset %d", offset)
	}
	return &chunk, nil
}

// PUT /v1/operator/snapshot: restore the snapshot file in the body. The
// body goes to the leader in chunks as it arrives (each within
// bodyReadTimeout), then the leader checks the whole file and restores
// it; the answer is what was restored. A body that is not a snapshot file
// is a 400 before anything reaches the servers.
func (h *handler) operatorSnapshotRestore(w http.ResponseWriter, r *http.Request) error {
	body := http.MaxBytesReader(w, r.Body, structs.SnapshotMaxFileSize)
	buf := make([]byte, structs.SnapshotChunkSize)
	var (
		up     structs.SnapshotUploadResponse
		offset int64
	)
	for {
		n, err := readChunk(w, body, buf)
		if offset == 0 && n > 0 && !looksGzip(buf[:n]) {
			_ = r.Body.Close()
			return badRequest("request body is not a berth snapshot file (it is not gzip data); send a file that `berth operator snapshot save` wrote")
		}
		if n > 0 {
			args := &structs.SnapshotUploadRequest{Handle: up.Handle, Offset: offset, Data: buf[:n]}
			if err := h.rpc(r, "Operator.SnapshotUpload", args, &up); err != nil {
				_ = r.Body.Close()
				return err
			}
			offset += int64(n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			_ = r.Body.Close()
			return snapshotBodyError(err)
		}
	}
	if offset == 0 {
		return badRequest("request body is empty; send the snapshot file that `berth operator snapshot save` wrote")
	}
	var reply structs.SnapshotRestoreResponse
	if err := h.rpc(r, "Operator.SnapshotRestore", &structs.SnapshotRestoreRequest{Handle: up.Handle}, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}

// readChunk fills buf from body as far as it goes, within bodyReadTimeout.
func readChunk(w http.ResponseWriter, body io.Reader, buf []byte) (int, error) {
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(bodyReadTimeout)) == nil
	n, err := io.ReadFull(body, buf)
	if deadline {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func looksGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

func snapshotBodyError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &timeoutError{msg: fmt.Sprintf("request body stalled: no part of it arrived within %s; send the snapshot file at once", bodyReadTimeout)}
	case errors.As(err, &mbe):
		return fmt.Errorf("request body is larger than %d MiB, the most a restore takes: %w", structs.SnapshotMaxFileSize>>20, err)
	}
	return badRequest("request body: %v", err)
}
