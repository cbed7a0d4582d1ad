package api

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/berth-csi/berth/structs"
)

// snapshotEndpoint is the cluster state backup's route.
const snapshotEndpoint = "/v1/operator/snapshot"

// SnapshotTimeout bounds how long a snapshot save or restore waits for
// its answer's headers: the leader first takes the whole snapshot, or
// checks and restores the whole file.
const SnapshotTimeout = 10 * time.Minute

// SnapshotSave asks the cluster for a snapshot of its whole state (GET
// /v1/operator/snapshot; with ACLs on, a management token). The body is
// the snapshot file: the caller reads it to the end and closes it. A
// download cut short ends in an error (io.ErrUnexpectedEOF); the file
// carries its own checksums, which `berth operator snapshot save` checks
// before it keeps the file. The request is retried, as any GET, until its
// headers come; the body is not.
func (o *Operator) SnapshotSave() (io.ReadCloser, *QueryMeta, error) {
	resp, err := o.c.retrying(http.MethodGet, snapshotEndpoint, func() (*http.Response, error) {
		return o.c.snapshotOnce(http.MethodGet, nil)
	})
	if err != nil {
		return nil, nil, err
	}
	return resp.Body, parseQueryMeta(resp), nil
}

// SnapshotRestore replaces the cluster's state with the snapshot file
// read from file (PUT /v1/operator/snapshot; with ACLs on, a management
// token, and the tokens are the snapshot's afterwards). The leader checks
// the file whole before it changes anything: a file cut short, damaged or
// of another kind is refused (structs.ErrBadRequest). When file is an
// io.Seeker, an answer that says nothing was applied (no leader yet) is
// retried from the file's start; otherwise the request is sent once.
func (o *Operator) SnapshotRestore(file io.Reader) (*structs.SnapshotRestoreResponse, *WriteMeta, error) {
	send := func() (*http.Response, error) { return o.c.snapshotOnce(http.MethodPut, file) }
	var (
		resp *http.Response
		err  error
	)
	if seeker, ok := file.(io.Seeker); ok {
		resp, err = o.c.retrying(http.MethodPut, snapshotEndpoint, func() (*http.Response, error) {
			if _, err := seeker.Seek(0, io.SeekStart); err != nil {
				return nil, fmt.Errorf("api: rewind the snapshot file: %w", err)
			}
			return send()
		})
	} else {
		resp, err = send()
	}
	if err != nil {
		return nil, nil, err
	}
	defer drain(resp)
	var out structs.SnapshotRestoreResponse
	if err := decodeBody(resp, snapshotEndpoint, &out); err != nil {
		return nil, nil, err
	}
	return &out, &WriteMeta{LastIndex: headerIndex(resp)}, nil
}

// snapshotOnce sends one request to the snapshot route, with body (nil
// for none) streamed as it is read, and waits SnapshotTimeout (or the
// client's longer write timeout) for the headers. A non-2xx answer is an
// *Error.
func (c *Client) snapshotOnce(method string, body io.Reader) (*http.Response, error) {
	var header http.Header
	if body != nil {
		header = http.Header{"Content-Type": []string{"application/gzip"}}
	}
	return c.roundTrip(method, snapshotEndpoint, nil, header, body, max(SnapshotTimeout, c.timeouts.Write))
}
