package csi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
)

// DefaultCallTimeout bounds a call whose context has no earlier deadline.
const DefaultCallTimeout = 30 * time.Second

// reconnect is how gRPC retries a lost plugin socket: fast, and never more
// than a second apart, so that a restarted plugin is seen within a second
// (gRPC's default backs off to two minutes).
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: 5 * time.Second,
}

// Option configures a Client.
type Option func(*Client)

// WithPluginID sets the plugin ID that errors and logs name. Without it
// they name the socket.
func WithPluginID(id string) Option { return func(c *Client) { c.plugin = id } }

// WithCallTimeout sets the per-call timeout (DefaultCallTimeout if unset
// or not positive). A call's context deadline, if earlier, wins.
func WithCallTimeout(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// Client is a connection to one plugin socket. gRPC reconnects it by
// itself when the plugin restarts on the same socket.
type Client struct {
	plugin  string
	socket  string
	timeout time.Duration
	logger  hclog.Logger
	closed  atomic.Bool

	conn       *grpc.ClientConn
	identity   csipb.IdentityClient
	node       csipb.NodeClient
	controller csipb.ControllerClient
}

// Dial connects to the plugin listening on the unix socket at the absolute
// path socket. It fails at once if there is no socket there; otherwise it
// does not wait for the connection, whose failures surface in the calls
// and through WatchConnection.
func Dial(ctx context.Context, socket string, logger hclog.Logger, opts ...Option) (*Client, error) {
	c := &Client{plugin: socket, socket: socket, timeout: DefaultCallTimeout}
	for _, o := range opts {
		o(c)
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	c.logger = logger.Named("csi").With("plugin_id", c.plugin)
	if err := ctx.Err(); err != nil {
		return nil, wrapError(c.plugin, "dial", err)
	}
	if err := checkSocket(socket); err != nil {
		return nil, wrapError(c.plugin, "dial", err)
	}
	conn, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(reconnect),
		grpc.WithChainUnaryInterceptor(c.observeCall, c.logCall),
	)
	if err != nil {
		return nil, wrapError(c.plugin, "dial", err)
	}
	conn.Connect()
	c.conn = conn
	c.identity = csipb.NewIdentityClient(conn)
	c.node = csipb.NewNodeClient(conn)
	c.controller = csipb.NewControllerClient(conn)
	return c, nil
}

func checkSocket(socket string) error {
	if !filepath.IsAbs(socket) {
		return fmt.Errorf("%w: %q", ErrInvalidPath, socket)
	}
	fi, err := os.Stat(socket)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s does not exist (is the plugin running?)", ErrNoSocket, socket)
	}
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%w: %s is a %s", ErrNotSocket, socket, fi.Mode().Type())
	}
	return nil
}

// Socket is the path the client dialed.
func (c *Client) Socket() string { return c.socket }

// Close ends the connection and any connection watchers. Calls after Close
// fail with ErrClosed.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.conn.Close()
}

// call runs one RPC under the per-call timeout and classifies its error.
func (c *Client) call(ctx context.Context, name string, fn func(context.Context) error) error {
	if c.closed.Load() {
		return wrapError(c.plugin, name, ErrClosed)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return wrapError(c.plugin, name, fn(ctx))
}

// logCall logs every call at trace level, its request stripped of secrets.
func (c *Client) logCall(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !c.logger.IsTrace() {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	c.logger.Trace("csi call", "method", method, "request", redact(req),
		"code", CodeOf(err).String(), "duration", time.Since(start))
	return err
}
