package csi

import (
	"context"
	"sync"
	"time"

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
	// grace is how long a forgotten client stays open for the calls that
	// hold it (their retries included), DefaultCallTimeout unless a test
	// sets it.
	grace time.Duration

	mu        sync.Mutex
	conns     map[string]*Client // by socket
	forgotten map[*Client]*time.Timer
	closed    bool
}

// NewPool returns an empty pool whose clients log through logger.
func NewPool(logger hclog.Logger) *Pool {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Pool{logger: logger, grace: DefaultCallTimeout, conns: map[string]*Client{}, forgotten: map[*Client]*time.Timer{}}
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
		p.retireLocked(c) // another plugin on this socket now
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

// Forget drops the client of socket, if the pool has one: the next Get
// dials anew. The dropped client is closed after the pool's grace, so that
// the calls holding it, and their retries, finish (gRPC reconnects it if
// the plugin comes back on the socket meanwhile); a plugin gone for good
// does not keep a reconnecting client.
func (p *Pool) Forget(socket string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[socket]; ok {
		delete(p.conns, socket)
		p.retireLocked(c)
	}
}

// retireLocked closes c after the grace; p.mu is held.
func (p *Pool) retireLocked(c *Client) {
	p.forgotten[c] = time.AfterFunc(p.grace, func() {
		p.mu.Lock()
		delete(p.forgotten, c)
		p.mu.Unlock()
		_ = c.Close()
	})
}

// Len is how many connections the pool holds.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close closes every client, forgotten ones included; Get fails
// afterwards.
func (p *Pool) Close() {
	p.mu.Lock()
	var all []*Client
	for _, c := range p.conns {
		all = append(all, c)
	}
	for c, timer := range p.forgotten {
		timer.Stop()
		all = append(all, c)
	}
	p.conns, p.forgotten, p.closed = map[string]*Client{}, map[*Client]*time.Timer{}, true
	p.mu.Unlock()
	for _, c := range all {
		_ = c.Close()
	}
}
