package csitest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"
)

// What the csi-test v4.2.0 mock driver reports about itself.
const (
	DefaultMockName   = "mock.csi.test" // the -name StartMockDriver passes unless told otherwise; also the driver's node ID
	MockVendorVersion = "0.3.0"         // GetPluginInfo vendor_version
	MockAttachLimit   = 2               // NodeGetInfo max_volumes_per_node unless -attach-limit says otherwise
)

const (
	startTimeout = 15 * time.Second // the driver listens in milliseconds; this is for a loaded machine
	stopTimeout  = 10 * time.Second
	logTail      = 64 << 10
)

// MockOptions configures one mock driver process.
type MockOptions struct {
	Name             string   // -name, the plugin name and node ID; DefaultMockName if empty
	ExtraArgs        []string // more flags, e.g. "-enable-topology", "-attach-limit=5"
	Env              []string // more environment, KEY=value
	ControllerSocket bool     // serve the controller service on a second socket (CSI_CONTROLLER_ENDPOINT)
	Hooks            string   // a hooks YAML (see WriteHooks), passed as -hooks-file
}

// Plugin is a mock driver process this package started. The sockets stay
// at the same paths across Restart.
type Plugin struct {
	Name             string
	Socket           string // node and identity; also controller unless ControllerSocket is set
	ControllerSocket string // controller and identity, when MockOptions.ControllerSocket
	LogPath          string // the driver's stdout and stderr, across restarts
	Root             string // berth-hostpath's -root: its volumes are dirs under Root/volumes

	t    testing.TB
	bin  string
	args []string
	env  []string

	mu   sync.Mutex
	proc *process // nil when not running
}

// process is one start of the driver. Its wait goroutine is owned by the
// Plugin: it ends when the process exits, and exited says so.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // from Wait, readable once exited is closed
}

// StartMockDriver starts the mock CSI driver on a socket in a fresh temp
// dir and returns once the socket accepts connections. The process is
// killed when the test ends; its log is written to t.Log if the test
// failed.
func StartMockDriver(t testing.TB, opts MockOptions) *Plugin {
	t.Helper()
	name := opts.Name
	if name == "" {
		name = DefaultMockName
	}
	dir := SocketDir(t)
	p := &Plugin{
		Name:    name,
		Socket:  filepath.Join(dir, "csi.sock"),
		LogPath: filepath.Join(t.TempDir(), "mock-driver.log"),
		t:       t,
		bin:     MockDriverPath(t),
		args:    append([]string{"-name=" + name}, opts.ExtraArgs...),
	}
	p.env = append(os.Environ(), "CSI_ENDPOINT=unix://"+p.Socket)
	if opts.ControllerSocket {
		p.ControllerSocket = filepath.Join(dir, "controller.sock")
		p.env = append(p.env, "CSI_CONTROLLER_ENDPOINT=unix://"+p.ControllerSocket)
	}
	p.env = append(p.env, opts.Env...)
	if opts.Hooks != "" {
		p.args = append(p.args, "-hooks-file="+WriteHooks(t, opts.Hooks))
	}
	t.Cleanup(p.cleanup)
	p.start()
	return p
}

// PID is the driver's process ID, 0 when it is not running.
func (p *Plugin) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return 0
	}
	return p.proc.cmd.Process.Pid
}

// Stop ends the driver with SIGTERM (it removes its sockets) and waits for
// it to exit, killing it if it does not within 10s. The sockets are gone
// afterwards even when the driver died before it installed its signal
// handler (SIGTERM right after it listened), so a stopped plugin is always
// one with no socket.
func (p *Plugin) Stop() {
	p.t.Helper()
	proc := p.take()
	if proc == nil {
		return
	}
	proc.signal(syscall.SIGCONT) // a paused process handles SIGTERM only once continued
	proc.signal(syscall.SIGTERM)
	select {
	case <-proc.exited:
	case <-time.After(stopTimeout):
		p.t.Errorf("csitest: mock driver %d ignored SIGTERM for %s; killing it", proc.cmd.Process.Pid, stopTimeout)
		proc.signal(syscall.SIGKILL)
		<-proc.exited
	}
	for _, sock := range []string{p.Socket, p.ControllerSocket} {
		if sock != "" {
			_ = os.Remove(sock)
		}
	}
}

// Kill crashes the driver with SIGKILL and waits for it to exit. Its
// sockets stay behind, as after a real crash.
func (p *Plugin) Kill() {
	p.t.Helper()
	if proc := p.take(); proc != nil {
		proc.signal(syscall.SIGKILL)
		<-proc.exited
	}
}

// Pause stops the driver with SIGSTOP and returns once every thread of it
// has stopped: its sockets still accept connections, but nothing answers,
// as with a hung plugin. (SIGSTOP takes effect only when a thread runs, so
// on a loaded machine the process may answer for a while after the signal.)
func (p *Plugin) Pause() {
	p.t.Helper()
	proc := p.running()
	proc.signal(syscall.SIGSTOP)
	pid := proc.cmd.Process.Pid
	must.Wait(p.t, wait.InitialSuccess(wait.BoolFunc(func() bool { return allThreadsStopped(pid) }),
		wait.Timeout(10*time.Second), wait.Gap(time.Millisecond)),
		must.Sprintf("csitest: plugin %d did not stop within 10s of SIGSTOP", pid))
}

// allThreadsStopped reports whether every thread of pid is in state T.
func allThreadsStopped(pid int) bool {
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			return false
		}
		// "pid (comm) state ...": comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return len(stats) > 0
}

// Resume continues a paused driver with SIGCONT.
func (p *Plugin) Resume() { p.running().signal(syscall.SIGCONT) }

// Restart stops the driver if it runs and starts it again on the same
// sockets, with the same flags, returning once the socket accepts
// connections. Its in-memory state (volumes) starts afresh.
func (p *Plugin) Restart() {
	p.t.Helper()
	p.Stop()
	p.start()
}

func (p *Plugin) start() {
	p.t.Helper()
	// A crashed driver leaves its socket behind; remove it so that waiting
	// for the socket waits for the new process.
	for _, s := range []string{p.Socket, p.ControllerSocket} {
		if s != "" {
			if err := os.Remove(s); err != nil && !errors.Is(err, os.ErrNotExist) {
				p.t.Fatalf("csitest: remove stale socket: %v", err)
			}
		}
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatalf("csitest: driver log: %v", err)
	}
	defer logf.Close() // the child has its own descriptor

	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("csitest: start mock driver: %v", err)
	}
	proc := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		proc.err = cmd.Wait()
		close(proc.exited)
	}()
	p.mu.Lock()
	p.proc = proc
	p.mu.Unlock()

	for _, s := range []string{p.Socket, p.ControllerSocket} {
		if s == "" {
			continue
		}
		if err := waitForSocket(s, proc.exited); err != nil {
			p.Kill()
			p.t.Fatalf("csitest: mock driver %d: %v\n%s", cmd.Process.Pid, err, p.logTail())
		}
	}
}

// waitForSocket returns once path is a unix socket that accepts a
// connection, or fails when the process exits or time runs out.
func waitForSocket(path string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for {
		if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
			if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
				c.Close()
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before listening on %s", path)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no socket at %s after %s", path, startTimeout)
		}
	}
}

// take detaches the running process from p, so that exactly one caller
// ends it.
func (p *Plugin) take() *process {
	p.mu.Lock()
	defer p.mu.Unlock()
	proc := p.proc
	p.proc = nil
	return proc
}

func (p *Plugin) running() *process {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		p.t.Fatalf("csitest: mock driver %s is not running", p.Name)
	}
	return p.proc
}

// signal sends sig to this process only, by its recorded PID; a process
// that already exited is left alone.
func (proc *process) signal(sig syscall.Signal) {
	select {
	case <-proc.exited:
		return
	default:
	}
	_ = proc.cmd.Process.Signal(sig) // fails only if it exited meanwhile
}

func (p *Plugin) cleanup() {
	p.Kill()
	if p.t.Failed() {
		p.t.Logf("csitest: mock driver %s log (%s):\n%s", p.Name, p.LogPath, p.logTail())
	}
}

func (p *Plugin) logTail() string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > logTail {
		b = b[len(b)-logTail:]
	}
	return string(b)
}

// Received reports whether the driver logged a request of method holding
// want. The mock logs each request, secrets included, at -v=3 and above:
// that is how a test sees what reached the plugin.
func (p *Plugin) Received(method, want string) bool {
	p.t.Helper()
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		p.t.Fatalf("csitest: read the mock driver's log: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "gRPCCall") && strings.Contains(line, "/"+method) && strings.Contains(line, want) {
			return true
		}
	}
	return false
}
