package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/clienttest"
	"github.com/berth-csi/berth/client/csitest"
	bexec "github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/internal/testlog"
)

// TestREADME_DevAgent runs, as written, the README's walkthroughs on the
// dev agent: "Two commands", "Storage with the dev agent" and "Run a job
// on a volume", and checks that each command prints what the README shows.
func TestREADME_DevAgent(t *testing.T) {
	w := newReadmeWalk(t)
	w.run("Two commands", "Storage with the dev agent", "Run a job on a volume")
}

// TestREADME_Cluster runs the README's cluster walkthroughs: three
// servers, a client with an external plugin, plugins as tasks, plugins as
// containers (where a Docker engine answers), then day 2: a job update, a
// node drain and a backup.
func TestREADME_Cluster(t *testing.T) {
	w := newReadmeWalk(t)
	w.run("A three-server cluster on one machine", "Plugins as tasks, on a cluster")
	w.runContainers()
	w.run("Day 2: update a job, drain a node, back up the cluster")
}

// TestREADME_SecureCluster runs the README's secure cluster walkthrough:
// certificates, gossip key, three servers and a client with mTLS and
// ACLs, bootstrap, policies and tokens, a job run with a deploy token.
func TestREADME_SecureCluster(t *testing.T) {
	w := newReadmeWalk(t)
	w.run("A secure cluster")
}

// readmePorts are the ports the README names; the test gives each a free
// one.
var readmePorts = []int{4746, 4747, 4748, 5746, 5747, 5748, 6746, 6747, 6748, 7746, 8746}

// readmeWalk runs walkthroughs in a work dir of their own: bin/ holds the
// binaries, examples/ the examples, each rewritten to the test's ports
// and dirs.
type readmeWalk struct {
	t        *testing.T
	dir      string
	rewrites []rewrite
	bind     map[string]string // shown ID -> actual ID
	env      []string          // "K=V" set by the walkthrough's export steps
	bg       []*readmeProc
	sections map[string][][]numberedLine
	docker   *client.Client // set once a walkthrough uses the Docker engine
}

type rewrite struct {
	re   *regexp.Regexp
	with string
}

// readmeProc is a command the walkthrough left running.
type readmeProc struct {
	cmd  *exec.Cmd
	line int
	out  *lockedBuffer
	done chan struct{}
}

func newReadmeWalk(t *testing.T) *readmeWalk {
	testlog.NeedRoot(t, "the walkthroughs run tasks with volumes and plugins that bind-mount")
	md, err := os.ReadFile("../../README.md")
	must.NoError(t, err)
	dir, err := os.MkdirTemp("", "readme") // short: plugin sockets live under it
	must.NoError(t, err)
	w := &readmeWalk{t: t, dir: dir, bind: map[string]string{}, sections: readmeSections(string(md))}
	t.Cleanup(w.cleanup)

	ports := testlog.FreePorts(t, "127.0.0.1", len(readmePorts))
	for i, p := range readmePorts {
		w.rewrites = append(w.rewrites, rewrite{regexp.MustCompile(`\b` + strconv.Itoa(p) + `\b`), strconv.Itoa(ports[i])})
	}
	// The README's dev node is named "laptop": a dev agent is named after
	// its host.
	host, err := os.Hostname()
	must.NoError(t, err)
	w.rewrites = append(w.rewrites, rewrite{regexp.MustCompile(`\blaptop\b`), host})
	for from, to := range map[string]string{
		"/tmp/berth":              filepath.Join(dir, "berth"),
		"/usr/local/bin":          filepath.Join(dir, "usr-local-bin"),
		"/var/lib/berth-hostpath": filepath.Join(dir, "var-lib-berth-hostpath"),
	} {
		w.rewrites = append(w.rewrites, rewrite{regexp.MustCompile(regexp.QuoteMeta(from)), to})
	}
	for _, d := range []string{"bin", "examples", "berth", "usr-local-bin"} {
		must.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	must.NoError(t, os.Rename(buildBerth(t), filepath.Join(dir, "bin", "berth")))
	must.NoError(t, os.Rename(csitest.HostpathBinary(t), filepath.Join(dir, "bin", "berth-hostpath")))
	examples, err := filepath.Glob("../../examples/*")
	must.NoError(t, err)
	for _, e := range examples {
		b, err := os.ReadFile(e)
		must.NoError(t, err)
		must.NoError(t, os.WriteFile(filepath.Join(dir, "examples", filepath.Base(e)), []byte(w.rewrite(string(b))), 0o644))
	}
	return w
}

// rewrite puts the test's ports and dirs, and the actual IDs, in place of
// the README's.
func (w *readmeWalk) rewrite(s string) string {
	for _, r := range w.rewrites {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return substitute(s, w.bind)
}

// run runs the sections' steps in order.
func (w *readmeWalk) run(sections ...string) {
	for _, name := range sections {
		blocks, ok := w.sections[name]
		must.True(w.t, ok && len(blocks) > 0, must.Sprintf("README has no section %q with a sh block", name))
		if name == "Plugins as tasks, on a cluster" {
			w.stopClients() // as the section says: the client and plugin above are stopped first
		}
		for _, b := range blocks {
			for _, st := range readmeSteps(b) {
				w.step(st)
			}
		}
	}
}

// step runs one step, and fails the test, naming the README line, if it
// does not do what the README shows.
func (w *readmeWalk) step(st readmeStep) {
	t := w.t
	t.Helper()
	cmd := w.rewrite(strings.TrimPrefix(st.cmd, "sudo "))
	switch {
	case st.file != "":
		name := strings.TrimPrefix(st.cmd, "cat ")
		must.NoError(t, os.WriteFile(filepath.Join(w.dir, name), []byte(w.rewrite(st.file)), 0o644))
		return
	case cmd == "make build" || cmd == "make test":
		return // the test built the binaries; make test is this
	case strings.HasPrefix(cmd, "export "):
		// Later commands, in the foreground and background, get it.
		kv := strings.TrimPrefix(cmd, "export ")
		must.StrContains(t, kv, "=", must.Sprintf("README:%d: export NAME=VALUE", st.line))
		w.env = append(w.env, strings.Trim(kv, `"`))
		return
	case cmd == "make dev":
		cmd = w.rewrite("bin/berth agent -dev -http-port 4746 -rpc-port 4747 -serf-port 4748")
		st.bg = true
	case strings.Contains(cmd, "berth agent"):
		st.bg = true
	}
	if st.bg {
		w.start(st.line, cmd)
		return
	}
	fails := slicesHasErrorLine(st.want)
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, code := w.exec(cmd)
		bind, err := matchOutput(w.rewriteLines(st.want), out, w.bind)
		if err == nil && (code != 0) == fails {
			w.bind = bind
			t.Logf("README:%d: %s: ok", st.line, st.cmd)
			return
		}
		if err == nil {
			err = fmt.Errorf("exit status %d", code)
		}
		// A read is asked again while the cluster settles (a leader
		// elected, a node or plugin registered); so is any command the
		// agents were not up to answer yet.
		if (isRead(cmd) || notUpYet(out)) && time.Now().Before(deadline) {
			time.Sleep(250 * time.Millisecond)
			continue
		}
		t.Fatalf("README:%d: %s\n(run as: %s)\n%v\nit printed:\n%s\nbackground logs:\n%s", st.line, st.cmd, cmd, err, out, w.logs())
	}
}

func (w *readmeWalk) rewriteLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = w.rewrite(l)
	}
	return out
}

func slicesHasErrorLine(lines []string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, "Error:") {
			return true
		}
	}
	return false
}

// isRead reports whether a command only reads (and may be asked again).
func isRead(cmd string) bool {
	for _, verb := range []string{" status", " members", " list-peers", " snapshot list", " logs"} {
		if strings.Contains(cmd, verb) {
			return true
		}
	}
	return false
}

// notUpYet reports whether a command failed because the agents are not
// up yet.
func notUpYet(out string) bool {
	for _, s := range []string{"cannot reach berth", "no cluster leader", "no leader", "Unavailable"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// exec runs a command in the work dir, with the default address the
// test's, and returns what it printed and its exit status.
func (w *readmeWalk) exec(cmd string) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	c.Dir = w.dir
	c.Env = append(append(os.Environ(), "BERTH_ADDR="+w.rewrite("http://127.0.0.1:4746")), w.env...)
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	return string(out) + err.Error(), -1
}

// start runs a command in the background, in its own process group.
func (w *readmeWalk) start(line int, cmd string) {
	p := &readmeProc{line: line, out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command("bash", "-c", "exec "+cmd)
	p.cmd.Dir = w.dir
	p.cmd.Env = append(os.Environ(), w.env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must.NoError(w.t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	w.bg = append(w.bg, p)
	w.t.Logf("README:%d: %s: started (pid %d)", line, cmd, p.cmd.Process.Pid)
}

// stop ends a background command as Ctrl-C would, then kills what is left
// of its process group.
func (p *readmeProc) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// stopClients stops the background commands that are not servers.
func (w *readmeWalk) stopClients() {
	var keep []*readmeProc
	for _, p := range w.bg {
		if strings.Contains(strings.Join(p.cmd.Args, " "), " -server ") {
			keep = append(keep, p)
			continue
		}
		p.stop()
	}
	w.bg = keep
}

func (w *readmeWalk) logs() string {
	var b bytes.Buffer
	for _, p := range w.bg {
		out := p.out.String()
		if len(out) > 4000 {
			out = "..." + out[len(out)-4000:]
		}
		fmt.Fprintf(&b, "--- README:%d %s\n%s\n", p.line, strings.Join(p.cmd.Args[2:], " "), out)
	}
	return b.String()
}

// cleanup stops clients before servers, kills the tasks they left, and
// unmounts what is left under the work dir before removing it.
func (w *readmeWalk) cleanup() {
	for i := len(w.bg) - 1; i >= 0; i-- {
		w.bg[i].stop()
	}
	w.removeDocker()
	clienttest.KillTasksUnder(w.dir)
	if _, err := bexec.DetachMountsUnder(w.dir, nil); err != nil {
		w.t.Logf("unmount under %s: %v", w.dir, err)
	}
	_ = os.RemoveAll(w.dir)
}
