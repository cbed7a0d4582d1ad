package loadtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one agent process that can be killed and started again with
// the same arguments (internal/chaos's process control, trimmed). It is
// signalled by its PID only, never by name. Its output goes to its own
// log file, which every start appends to.
type proc struct {
	name    string
	bin     string
	args    []string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed once the current process has been reaped
}

// start starts the process; it must not be running.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.exited) {
		return fmt.Errorf("loadtest: %s is already running (pid %d)", p.name, p.cmd.Process.Pid)
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("loadtest: open the log of %s: %w", p.name, err)
	}
	fmt.Fprintf(f, "=== loadtest: %s starting %s %s\n", time.Now().Format(time.RFC3339Nano), p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("loadtest: start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = f.Close()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	return nil
}

// pid is the current process's PID, 0 when it never started.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// running reports whether the current process has not exited.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !isClosed(p.exited)
}

// signal sends sig to the current process, if it runs.
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.exited) {
		return fmt.Errorf("loadtest: %s is not running", p.name)
	}
	return syscall.Kill(p.cmd.Process.Pid, sig)
}

// kill sends SIGKILL and waits until the process is reaped.
func (p *proc) kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	if !p.wait(time.Minute) {
		return fmt.Errorf("loadtest: %s (pid %d) not reaped a minute after SIGKILL", p.name, p.pid())
	}
	return nil
}

// wait waits up to d for the current process to exit; it reports whether
// it did.
func (p *proc) wait(d time.Duration) bool {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited == nil {
		return true
	}
	select {
	case <-exited:
		return true
	case <-time.After(d):
		return false
	}
}

// stop ends the process for good at cleanup: SIGTERM, and SIGKILL if it
// has not exited within grace.
func (p *proc) stop(grace time.Duration) {
	if !p.running() {
		return
	}
	_ = p.signal(syscall.SIGTERM)
	if !p.wait(grace) {
		_ = p.kill()
	}
}

// logTail is the last n lines of the process's log.
func (p *proc) logTail(n int) string { return tailFile(p.logPath, n) }

// tailFile is the last n lines of the file at path.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
