package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	bexec "github.com/berth-csi/berth/client/drivers/exec"
)

// devPluginID is the built-in plugin `berth agent -dev` runs.
const devPluginID = "hostpath"

// devPlugin is the berth-hostpath process a dev agent runs.
type devPlugin struct {
	cmd    *exec.Cmd
	socket string
	root   string
	done   chan struct{}
}

// findHostpath finds the berth-hostpath binary next to this berth binary,
// else on PATH.
func findHostpath() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "berth-hostpath")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("berth-hostpath")
	if err != nil {
		return "", errors.New("dev mode needs the berth-hostpath binary next to berth or on PATH; build both with `make build`")
	}
	return p, nil
}

// devPluginWait bounds the wait for the built-in plugin's socket.
const devPluginWait = 10 * time.Second

// startDevPlugin starts berth-hostpath on a socket in the data dir and
// waits until the socket accepts connections, so that the client's first
// probe finds it up (a dev start logs no "plugin unhealthy" and leaves no
// such node event).
func startDevPlugin(dataDir string, logger hclog.Logger) (*devPlugin, error) {
	bin, err := findHostpath()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(dataDir, "plugins", devPluginID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("dev plugin dir: %w", err)
	}
	p := &devPlugin{
		socket: filepath.Join(dir, "csi.sock"),
		root:   filepath.Join(dir, "volumes"),
		done:   make(chan struct{}),
	}
	p.cmd = exec.Command(bin, "-endpoint", "unix://"+p.socket, "-root", p.root)
	out := logger.Named("plugin").With("plugin_id", devPluginID)
	w := out.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true})
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	if err := p.waitListening(devPluginWait); err != nil {
		p.stop(time.Second)
		return nil, err
	}
	out.Info("plugin started", "pid", p.cmd.Process.Pid, "socket", p.socket)
	return p, nil
}

// waitListening waits until the plugin's socket accepts a connection. It
// fails if the plugin exits first or the wait passes.
func (p *devPlugin) waitListening(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		conn, err := net.DialTimeout("unix", p.socket, time.Second)
		if err == nil {
			_ = conn.Close()
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("the built-in plugin berth-hostpath exited before it listened on %s (its output is in the log above)", p.socket)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the built-in plugin berth-hostpath did not listen on %s within %s: %v", p.socket, wait, err)
		}
	}
}

// stop ends the plugin: SIGTERM, then SIGKILL after a grace period.
func (p *devPlugin) stop(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// unmountUnder detaches every mount below dir, deepest first, so that
// removing a dev data dir never reaches through a bind mount into what it
// points at.
func unmountUnder(dir string, logger hclog.Logger) {
	if _, err := bexec.DetachMountsUnder(dir, nil); err != nil {
		logger.Warn("could not unmount everything under the dev data dir", "dir", dir, "error", err)
	}
}
