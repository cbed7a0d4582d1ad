package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/docker/docker/client"
	"github.com/hashicorp/go-hclog"
)

// Errors, for errors.Is.
var (
	// ErrImageMissing: the task's image is not on this node, and the task
	// does not ask for a pull.
	ErrImageMissing = errors.New("docker: image not present")
	// ErrPrivilegedNotAllowed: the task asks for a privileged container
	// and the client's driver config does not allow them.
	ErrPrivilegedNotAllowed = errors.New("docker: privileged containers are not allowed on this client")
	// ErrCapsNotAllowed: the task adds capabilities the client's
	// allow_caps does not hold.
	ErrCapsNotAllowed = errors.New("docker: capabilities not allowed on this client")
	// ErrHostNetworkNotAllowed: the task asks for the host's network and
	// the client's driver config does not allow it.
	ErrHostNetworkNotAllowed = errors.New("docker: the host's network is not allowed on this client")
	// ErrRootNotAllowed: the container would run as root (its user's or
	// its image's), and neither the client allows root tasks nor the
	// engine remaps root.
	ErrRootNotAllowed = errors.New("docker: containers may not run as root on this client")
	// ErrInvalidTask: the task config is wrong (the message says how).
	ErrInvalidTask = errors.New("docker: invalid task")
	// ErrInvalidConfig: the driver's config is wrong.
	ErrInvalidConfig = errors.New("docker: invalid driver config")
	// ErrGone: a task to reattach to no longer runs.
	ErrGone = errors.New("docker: the task's container is gone")
	// ErrClosed: the driver was closed.
	ErrClosed = errors.New("docker: driver closed")
)

// DefaultEndpoint is the local engine's socket.
const DefaultEndpoint = "unix:///var/run/docker.sock"

// Config is the client's driver "docker" block.
type Config struct {
	// Endpoint is the engine's address: unix:///path or tcp://host:port;
	// "" is DefaultEndpoint.
	Endpoint string
	// AllowPrivileged lets tasks run privileged containers.
	AllowPrivileged bool
	// AllowCaps are the capabilities a task may add (normalized, as
	// structs.NormalizeCapabilities makes them; "all" for any); nil is
	// structs.DockerDefaultAllowCaps.
	AllowCaps []string
	// AllowHostNetwork lets tasks run on the host's network (network_mode
	// = "host"); off, they get the engine's bridge.
	AllowHostNetwork bool
}

// DefaultConfig is the local engine, no privileged containers.
func DefaultConfig() Config { return Config{Endpoint: DefaultEndpoint} }

// Validate checks the endpoint's form (not that an engine answers there).
func (c Config) Validate() error {
	if c.Endpoint == "" {
		return nil
	}
	if _, err := client.ParseHostURL(c.Endpoint); err != nil {
		return fmt.Errorf("%w: endpoint %q: %v", ErrInvalidConfig, c.Endpoint, err)
	}
	return nil
}

// Driver starts and finds tasks' containers on one engine.
type Driver struct {
	cfg    Config
	cli    *client.Client
	logger hclog.Logger

	// ctx is the handles' lifetime: Close cancels it and waits for them.
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex // guards closed against wg.Add
	closed bool
	wg     sync.WaitGroup

	// userns is what the last fingerprint found of the engine's user
	// namespaces (usernsUnknown before one ran).
	userns atomic.Int32
}

// New returns a driver for the engine at cfg.Endpoint. It does no I/O:
// Fingerprint says whether the engine answers.
func New(cfg Config, logger hclog.Logger) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	cli, err := client.NewClientWithOpts(client.WithHost(cfg.Endpoint), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("%w: endpoint %q: %v", ErrInvalidConfig, cfg.Endpoint, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Driver{cfg: cfg, cli: cli, logger: logger.Named("docker"), ctx: ctx, cancel: cancel}, nil
}

// Close stops watching every handle (their containers run on; their Done
// channels stay open) and releases the engine's connections.
func (d *Driver) Close() error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
	return d.cli.Close()
}

// goHandle runs fn as a handle goroutine the driver owns, unless the
// driver is closed.
func (d *Driver) goHandle(fn func()) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		fn()
	}()
	return nil
}

// Health is what Fingerprint found.
type Health struct {
	Healthy    bool
	Version    string // the engine's version, such as 20.10.24
	APIVersion string // its API version, such as 1.41
	Err        string // why it is not healthy
	// UserNamespaces: the engine remaps containers' root to an
	// unprivileged host user (dockerd --userns-remap).
	UserNamespaces bool
}

// Fingerprint checks that the engine answers (a ping and its version).
func (d *Driver) Fingerprint(ctx context.Context) Health {
	if _, err := d.cli.Ping(ctx); err != nil {
		return Health{Err: fmt.Sprintf("docker engine at %s does not answer: %v", d.cfg.Endpoint, err)}
	}
	v, err := d.cli.ServerVersion(ctx)
	if err != nil {
		return Health{Err: fmt.Sprintf("docker engine at %s: read its version: %v", d.cfg.Endpoint, err)}
	}
	userns, err := d.userNamespaces(ctx)
	if err != nil {
		return Health{Err: fmt.Sprintf("docker engine at %s: read its security options: %v", d.cfg.Endpoint, err)}
	}
	d.noteUserns(userns)
	return Health{Healthy: true, Version: v.Version, APIVersion: v.APIVersion, UserNamespaces: userns}
}

// userNamespaces asks the engine whether it remaps containers' root
// (its security options hold "name=userns").
func (d *Driver) userNamespaces(ctx context.Context) (bool, error) {
	info, err := d.cli.Info(ctx)
	if err != nil {
		return false, err
	}
	for _, o := range info.SecurityOptions {
		if o == "name=userns" || strings.HasPrefix(o, "name=userns,") {
			return true, nil
		}
	}
	return false, nil
}
