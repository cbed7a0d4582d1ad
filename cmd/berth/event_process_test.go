package main_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// streamProc is a running `berth event stream`, its stdout read line by
// line.
type streamProc struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan struct{}
	mu    sync.Mutex
	err   strings.Builder
}

func startEventStream(t *testing.T, bin string, a *agentProc, args ...string) *streamProc {
	t.Helper()
	p := &streamProc{cmd: exec.Command(bin, append([]string{"event", "stream"}, args...)...),
		lines: make(chan string, 1024), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "BERTH_ADDR="+a.httpAddr())
	out, err := p.cmd.StdoutPipe()
	must.NoError(t, err)
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.err}
	must.NoError(t, p.cmd.Start())
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

// until reads lines until stop says so, failing after timeout.
func (p *streamProc) until(t *testing.T, timeout time.Duration, stop func(line string) bool) []string {
	t.Helper()
	var got []string
	deadline := time.After(timeout)
	for {
		select {
		case l := <-p.lines:
			got = append(got, l)
			if stop(l) {
				return got
			}
		case <-p.done:
			t.Fatalf("berth event stream ended: %s\nlines: %s", p.stderr(), strings.Join(got, "\n"))
		case <-deadline:
			t.Fatalf("berth event stream: no end line within %s; lines:\n%s", timeout, strings.Join(got, "\n"))
		}
	}
}

// interrupt sends SIGINT and returns the exit status.
func (p *streamProc) interrupt(t *testing.T) int {
	t.Helper()
	must.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	<-p.done
	err := p.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	must.NoError(t, err)
	return 0
}

func (p *streamProc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// volumesIndex is the index of a volume list: where a stream starts to
// see every later change of the volumes.
func volumesIndex(t *testing.T, a *agentProc) uint64 {
	t.Helper()
	resp, err := http.Get(a.httpAddr() + "/v1/volumes")
	must.NoError(t, err)
	defer resp.Body.Close()
	n, err := strconv.ParseUint(resp.Header.Get("X-Berth-Index"), 10, 64)
	must.NoError(t, err)
	return n
}

// TestProcess_EventStream_ClaimLife: on a dev agent, `berth event stream
// -json -topic CSIVolume:data` started after a volume list's index shows
// the volume's creation, then its claim's whole life as a job runs on it
// and stops: taken, unpublishing, node-detached, controller-detached,
// freed, in order, at increasing raft indexes; the human format shows the
// same; both end with exit 0 on SIGINT.
func TestProcess_EventStream_ClaimLife(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and starts a dev agent")
	}
	testlog.NeedRoot(t, "the dev agent runs a task with a volume in a mount namespace")
	bin, a := startDevAgent(t) // dev_agent_process_test.go
	from := strconv.FormatUint(volumesIndex(t, a), 10)
	raw := startEventStream(t, bin, a, "-json", "-topic", "CSIVolume:data", "-index", from)
	human := startEventStream(t, bin, a, "-topic", "CSIVolume:data", "-index", from)

	timedCLI(t, bin, a, "volume", "create", writeSpec(t, "data.hcl", volumeSpec("data", "")))
	timedCLI(t, bin, a, "job", "run", writeSpec(t, "writer.hcl", devWriterJob))
	allocs := running(jobAllocs(t, bin, a, "writer"))
	must.SliceLen(t, 1, allocs)
	stop := time.Now()
	timedCLI(t, bin, a, "job", "stop", "writer")

	lines := raw.until(t, 60*time.Second, func(l string) bool { return strings.Contains(l, `"Type":"ClaimFreed"`) })
	t.Logf("figure: job stop to ClaimFreed on the stream: %s", time.Since(stop).Round(time.Millisecond))
	var claims []structs.Event
	sawCreate := false
	for _, l := range lines {
		var e structs.Event
		must.NoError(t, json.Unmarshal([]byte(l), &e), must.Sprintf("line %q", l))
		must.EqOp(t, structs.TopicCSIVolume, e.Topic)
		must.EqOp(t, "data", e.Key)
		must.StrNotContains(t, l, `"Secrets"`)
		if e.Type == structs.EventVolumeRegistered {
			sawCreate = true
		}
		if e.Payload.Claim != nil {
			must.EqOp(t, allocs[0].ID, e.Payload.Claim.AllocID)
			claims = append(claims, e)
		}
	}
	must.True(t, sawCreate, must.Sprint("the volume's creation is on the stream"))
	var types []string
	for i, e := range claims {
		types = append(types, e.Type)
		if i > 0 {
			must.Greater(t, claims[i-1].Index, e.Index)
		}
	}
	must.Eq(t, []string{structs.EventClaimTaken, structs.EventClaimUnpublishing, structs.EventClaimNodeDetached,
		structs.EventClaimControllerDetached, structs.EventClaimFreed}, types)

	shown := human.until(t, 30*time.Second, func(l string) bool { return strings.Contains(l, "ClaimFreed") })
	t.Logf("an event excerpt of one claim's life (berth event stream -json -topic CSIVolume:data):\n%s", strings.Join(lines, "\n"))
	t.Logf("the same, for people (berth event stream -topic CSIVolume:data):\n%s", strings.Join(shown, "\n"))
	must.EqOp(t, len(lines), len(shown), must.Sprint("one line per event in both formats"))
	for _, p := range []*streamProc{raw, human} {
		must.EqOp(t, 0, p.interrupt(t), must.Sprint(p.stderr()))
		must.EqOp(t, "", p.stderr())
	}
}
