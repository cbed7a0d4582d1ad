package agentproc

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

// Proc is one agent process that can be killed and started again with the
// same arguments. It is signalled by its PID only, never by name. Its
// output goes to its own log file, which every start appends to. Set the
// exported fields before the first Start; a Proc is safe for concurrent
// use after that.
type Proc struct {
	Name    string
	Bin     string
	Args    []string
	LogPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed once the current process has been reaped
}

// Start starts the process; it must not be running.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.exited) {
		return fmt.Errorf("agentproc: %s is already running (pid %d)", p.Name, p.cmd.Process.Pid)
	}
	f, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("agentproc: open the log of %s: %w", p.Name, err)
	}
	fmt.Fprintf(f, "=== %s: %s starting %s %s\n", time.Now().Format(time.RFC3339Nano), p.Name, p.Bin, strings.Join(p.Args, " "))
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("agentproc: start %s: %w", p.Name, err)
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

// PID is the current process's PID, 0 when it never started.
func (p *Proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether the current process has not exited.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !isClosed(p.exited)
}

// Signal sends sig to the current process, if it runs.
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.exited) {
		return fmt.Errorf("agentproc: %s is not running", p.Name)
	}
	return syscall.Kill(p.cmd.Process.Pid, sig)
}

// Kill sends SIGKILL and waits until the process is reaped.
func (p *Proc) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	if !p.Wait(time.Minute) {
		return fmt.Errorf("agentproc: %s (pid %d) not reaped a minute after SIGKILL", p.Name, p.PID())
	}
	return nil
}

// Wait waits up to d for the current process to exit; it reports whether
// it did.
func (p *Proc) Wait(d time.Duration) bool {
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

// Stop ends the process for good at cleanup: SIGCONT (it may be stopped),
// SIGTERM, and SIGKILL if it has not exited within grace.
func (p *Proc) Stop(grace time.Duration) {
	if !p.Running() {
		return
	}
	_ = p.Signal(syscall.SIGCONT)
	_ = p.Signal(syscall.SIGTERM)
	if !p.Wait(grace) {
		_ = p.Kill()
	}
}

// LogTail is the last n lines of the process's log.
func (p *Proc) LogTail(n int) string { return TailFile(p.LogPath, n) }

// TailFile is the last n lines of the file at path.
func TailFile(path string, n int) string {
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
