package csi

import (
	"context"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Pool keeps one long-lived Client per plugin socket, shared by every
// call to that plugin: a gRPC connection costs more to set up than a call
// (issue 14 measured twice the call), and gRPC multiplexes concurrent
// calls over one connection and reconnects it by itself when the plugin
// restarts on the same socket. There are no keepalive pings: a plugin
// that dies closes its unix socket, which gRPC sees at once, and gRPC
// servers refuse pings more often than every 5 minutes by default.
//
// The owner calls Forget when a plugin is deregistered (or moves to
// another socket), and Close when it stops. A Pool is safe for concurrent
// use.
type Pool struct {
	logger hclog.Logger

	mu     sync.Mutex
	conns  map[string]*Client // by socket
	closed bool
}

// NewPool returns an empty pool whose clients log through logger.
func NewPool(logger hclog.Logger) *Pool {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Pool{logger: logger, conns: map[string]*Client{}}
}

// Get returns the pool's client for socket, dialing it on first use. The
// caller must not Close it. pluginID names the plugin in errors and logs.
// A dial fails as Dial does (no socket there); nothing is kept then.
func (p *Pool) Get(ctx context.Context, pluginID, socket string) (*Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, wrapError(pluginID, "dial", ErrClosed)
	}
	if c, ok := p.conns[socket]; ok && c.plugin == pluginID {
		return c, nil
	} else if ok {
		_ = c.Close() // another plugin on this socket now
	}
	// Dial does not wait for the connection: holding the lock is brief.
	c, err := Dial(ctx, socket, p.logger, WithPluginID(pluginID))
	if err != nil {
		delete(p.conns, socket)
		return nil, err
	}
	p.conns[socket] = c
	return c, nil
}

// Forget closes and drops the client of socket, if the pool has one;
// calls in flight on it fail with ErrClosed or gRPC's Canceled. The next
// Get dials again.
func (p *Pool) Forget(socket string) {
	p.mu.Lock()
	c, ok := p.conns[socket]
	delete(p.conns, socket)
	p.mu.Unlock()
	if ok {
		_ = c.Close()
	}
}

// Len is how many connections the pool holds.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close closes every client; Get fails afterwards.
func (p *Pool) Close() {
	p.mu.Lock()
	conns := p.conns
	p.conns, p.closed = map[string]*Client{}, true
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}
