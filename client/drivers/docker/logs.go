package docker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/berth-csi/berth/client/internal/beneath"
	"github.com/berth-csi/berth/internal/backoff"
)

// copyLogs appends the container's log stream, from just after since (the
// zero time: from its start), to the handle's files, until the stream has
// ended with the container stopped, or ctx ends. A broken stream is read
// again from just after the last frame copied.
func (h *Handle) copyLogs(ctx context.Context, since time.Time, exited <-chan struct{}) {
	stdout, err := h.logs.open(h.logs.stdout)
	if err != nil {
		h.logger.Error("cannot copy the container's logs", "error", err)
		return
	}
	defer stdout.Close()
	stderr, err := h.logs.open(h.logs.stderr)
	if err != nil {
		h.logger.Error("cannot copy the container's logs", "error", err)
		return
	}
	defer stderr.Close()

	last := since
	outW := &stampWriter{f: stdout, last: &last, h: h}
	errW := &stampWriter{f: stderr, last: &last, h: h}
	for attempt := 1; ; attempt++ {
		err := h.followLogs(ctx, last, outW, errW)
		switch {
		case ctx.Err() != nil:
			return
		case cerrdefs.IsNotFound(err):
			return
		case err != nil:
			h.logger.Warn("the container's log stream broke; reading it again", "error", err)
		case h.stopped(ctx, exited):
			return // the engine ends the stream once the container stops
		}
		if !backoff.Sleep(ctx, retry.Delay(attempt)) {
			return
		}
	}
}

// followLogs copies the log stream from just after last until it ends.
func (h *Handle) followLogs(ctx context.Context, last time.Time, stdout, stderr *stampWriter) error {
	opts := container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true}
	if !last.IsZero() {
		next := last.Add(time.Nanosecond)
		opts.Since = fmt.Sprintf("%d.%09d", next.Unix(), next.Nanosecond())
	}
	rc, err := h.d.cli.ContainerLogs(ctx, h.state.ContainerID, opts)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = stdcopy.StdCopy(stdout, stderr, rc)
	return err
}

// stopped reports whether the container no longer runs: it has exited
// (the handle saw it) or an inspect says so.
func (h *Handle) stopped(ctx context.Context, exited <-chan struct{}) bool {
	select {
	case <-exited:
		return true
	default:
	}
	c, err := h.d.cli.ContainerInspect(ctx, h.state.ContainerID)
	if cerrdefs.IsNotFound(err) {
		return true
	}
	return err == nil && c.ContainerJSONBase != nil && c.State != nil && !c.State.Running
}

// stampWriter appends the frames of one stream (stdout or stderr), each
// "<RFC 3339 time> <line>", to f without their stamps, and sets f's
// modification time to each frame's stamp: the file records how far the
// copy got, for a reattach. last is the stamp of the last frame copied of
// either stream.
type stampWriter struct {
	f    *os.File
	last *time.Time
	h    *Handle
}

// Write takes one whole frame (stdcopy writes each in one call).
func (w *stampWriter) Write(p []byte) (int, error) {
	stamp, line, ok := bytes.Cut(p, []byte{' '})
	ts, err := time.Parse(time.RFC3339Nano, string(stamp))
	if !ok || err != nil {
		line = p // not stamped: copied as it is
	}
	if _, err := w.f.Write(line); err != nil {
		return 0, fmt.Errorf("append to %s: %w", w.f.Name(), err)
	}
	if ok && err == nil {
		*w.last = ts
		if err := beneath.SetModTime(w.f, ts); err != nil {
			w.h.logger.Warn("cannot record how far the log copy got", "path", w.f.Name(), "error", err)
		}
	}
	return len(p), nil
}

// logFiles are a task's two log files and the dir (its alloc dir) they
// are opened beneath: no link below it is followed.
type logFiles struct {
	root, stdout, stderr string // "" root: each file's own dir
}

func (c *TaskConfig) logFiles() logFiles {
	return logFiles{root: c.LogRoot, stdout: c.StdoutPath, stderr: c.StderrPath}
}

// open opens one of the files for appending, creating it.
func (l logFiles) open(path string) (*os.File, error) { return beneath.OpenAppend(l.root, path) }

// touch makes sure both files exist.
func (l logFiles) touch() error {
	for _, p := range []string{l.stdout, l.stderr} {
		f, err := l.open(p)
		if err != nil {
			return err
		}
		f.Close()
	}
	return nil
}

// copiedUntil is the stamp of the last frame a handle copied into the
// log files (the later of their modification times), or the zero time
// when neither exists (or either is not berth's: a link is not read).
func (l logFiles) copiedUntil() time.Time {
	var t time.Time
	for _, p := range []string{l.stdout, l.stderr} {
		root := l.root
		if root == "" {
			root = filepath.Dir(p)
		}
		rel, err := beneath.Split(root, p)
		if err != nil {
			continue
		}
		r, err := beneath.Open(root)
		if err != nil {
			continue
		}
		fi, err := r.Stat(rel)
		r.Close()
		if err == nil && fi.ModTime().After(t) {
			t = fi.ModTime()
		}
	}
	return t
}
