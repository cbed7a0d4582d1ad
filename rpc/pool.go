package rpc

import (
	"context"
	"crypto/tls"
	"net"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"
)

// DefaultMaxStreams bounds the concurrent calls per address when NewPool is
// given no positive hint.
const DefaultMaxStreams = 128

// Pool calls servers over one yamux session per address, dialed on first
// use (TypeMultiplex) and reused across calls, one stream per call. A
// session that breaks is dropped and dialed again by the next call.
type Pool struct {
	logger     hclog.Logger
	maxStreams int
	streams    *Server // serves streams the far side opens; nil rejects them
	yamuxCfg   *yamux.Config
	localIP    net.IP // the source address of its connections; nil lets the system choose
	tlsConfig  func() *tls.Config

	ctx    context.Context // ends at Shutdown
	cancel context.CancelFunc

	mu       sync.Mutex
	conns    map[string]*poolConn
	shutdown bool
	wg       sync.WaitGroup // one serveStreams goroutine per live session
}

// poolConn is the session slot for one address.
type poolConn struct {
	addr     string
	sem      chan struct{} // bounds calls in flight
	dialLock chan struct{} // one dialer at a time; a channel so waiting honours ctx

	mu   sync.Mutex
	sess *yamux.Session
}

// PoolOption configures a Pool.
type PoolOption func(*Pool)

// WithStreamServer makes the pool serve srv on every stream the far side
// opens on a pooled session: how a server calls back the client that
// dialed it. Without it such streams are closed at once.
func WithStreamServer(srv *Server) PoolOption {
	return func(p *Pool) { p.streams = srv }
}

// WithLocalIP makes the pool dial from ip (an agent's bind address), so
// that its connections come from the address the node is known by. An
// empty or unspecified address (0.0.0.0, ::) lets the system choose.
func WithLocalIP(ip string) PoolOption {
	return func(p *Pool) { p.localIP = bindIP(ip) }
}

// WithPoolTLS makes the pool dial its sessions over TLS (see WithDialTLS)
// with the configuration config returns, called per dial so that a
// certificate reload applies to the next session.
func WithPoolTLS(config func() *tls.Config) PoolOption {
	return func(p *Pool) { p.tlsConfig = config }
}

// NewPool returns an empty pool. maxStreamsHint bounds the calls in flight
// per address (further calls wait, within their ctx); <= 0 means
// DefaultMaxStreams.
func NewPool(logger hclog.Logger, maxStreamsHint int, opts ...PoolOption) *Pool {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if maxStreamsHint <= 0 {
		maxStreamsHint = DefaultMaxStreams
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{
		logger:     logger.Named("rpc_pool"),
		maxStreams: maxStreamsHint,
		ctx:        ctx,
		cancel:     cancel,
		conns:      map[string]*poolConn{},
	}
	for _, o := range opts {
		o(p)
	}
	p.yamuxCfg = yamuxConfig(p.logger)
	if p.yamuxCfg.AcceptBacklog < maxStreamsHint {
		p.yamuxCfg.AcceptBacklog = maxStreamsHint
	}
	return p
}

// Call calls method on the server at addr and decodes its answer into
// reply. The method's error comes back with its code. When no answer comes
// the error names addr and method, and says whether the request was sent:
// Unavailable when it was not (dial failure, no session, ctx ended before
// it was written), Indeterminate when it was (the session broke, or ctx was
// cancelled or passed its deadline, while the method may have been
// running). The stream is closed, and a broken session is dropped so the
// next call dials again.
func (p *Pool) Call(ctx context.Context, addr, method string, args, reply any) error {
	pc, err := p.conn(addr)
	if err != nil {
		return unavailable(method, addr, err)
	}
	select {
	case pc.sem <- struct{}{}:
	case <-ctx.Done():
		return unavailable(method, addr, ctx.Err())
	}
	defer func() { <-pc.sem }()

	for attempt := 0; ; attempt++ {
		sess, err := p.session(ctx, pc)
		if err != nil {
			return unavailable(method, addr, err)
		}
		st, err := sess.Open()
		if err != nil {
			// Nothing was sent: a stale session can be redialed once.
			p.drop(pc, sess, err)
			if attempt == 0 && ctx.Err() == nil {
				continue
			}
			return unavailable(method, addr, err)
		}
		err = roundTrip(ctx, st, method, args, reply)
		_ = st.Close()
		if err != nil && sess.IsClosed() {
			p.drop(pc, sess, err)
		}
		return coded(err, method, addr)
	}
}

// Shutdown closes every session and waits for the goroutines serving them.
// Calls in flight fail Indeterminate (Unavailable if their request was not
// sent yet); later calls fail Unavailable.
func (p *Pool) Shutdown() {
	p.mu.Lock()
	if p.shutdown {
		p.mu.Unlock()
		return
	}
	p.shutdown = true
	conns := make([]*poolConn, 0, len(p.conns))
	for _, pc := range p.conns {
		conns = append(conns, pc)
	}
	p.mu.Unlock()

	p.cancel()
	for _, pc := range conns {
		pc.swap(nil)
	}
	p.wg.Wait()
}

// conn returns the slot for addr, creating it.
func (p *Pool) conn(addr string) (*poolConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shutdown {
		return nil, errPoolShutdown
	}
	pc := p.conns[addr]
	if pc == nil {
		pc = &poolConn{
			addr:     addr,
			sem:      make(chan struct{}, p.maxStreams),
			dialLock: make(chan struct{}, 1),
		}
		p.conns[addr] = pc
	}
	return pc, nil
}

// live returns pc's session if it is open.
func (pc *poolConn) live() *yamux.Session {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.sess != nil && !pc.sess.IsClosed() {
		return pc.sess
	}
	return nil
}

// swap makes sess (nil for none) pc's session and closes the one it
// replaces.
func (pc *poolConn) swap(sess *yamux.Session) {
	if old := pc.replace(sess); old != nil {
		_ = old.Close()
	}
}

// replace makes sess pc's session and returns the one it had.
func (pc *poolConn) replace(sess *yamux.Session) *yamux.Session {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	old := pc.sess
	pc.sess = sess
	return old
}

// session returns pc's open session, dialing one if there is none.
func (p *Pool) session(ctx context.Context, pc *poolConn) (*yamux.Session, error) {
	if s := pc.live(); s != nil {
		return s, nil
	}
	select {
	case pc.dialLock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-pc.dialLock }()
	if s := pc.live(); s != nil {
		return s, nil // another caller dialed while we waited
	}

	conn, err := dial(ctx, pc.addr, TypeMultiplex, p.localIP, p.tlsConfig)
	if err != nil {
		return nil, err
	}
	sess, err := yamux.Client(conn, p.yamuxCfg)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	// Install the session under p.mu: a Shutdown that starts after the
	// check then finds it and closes it, instead of waiting forever on
	// a session it never saw.
	p.mu.Lock()
	if p.shutdown {
		p.mu.Unlock()
		_ = sess.Close()
		return nil, errPoolShutdown
	}
	p.wg.Add(1)
	old := pc.replace(sess)
	p.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	go p.serveStreams(sess, connPeer(conn))
	p.logger.Debug("session opened", "addr", pc.addr)
	return sess, nil
}

// drop forgets sess if it is still pc's session, and closes it.
func (p *Pool) drop(pc *poolConn, sess *yamux.Session, cause error) {
	pc.mu.Lock()
	if pc.sess == sess {
		pc.sess = nil
	}
	pc.mu.Unlock()
	_ = sess.Close()
	p.logger.Debug("session dropped", "addr", pc.addr, "error", cause)
}

// serveStreams answers the streams the far side opens on sess until sess
// closes: with the stream server if there is one, else by closing them.
// Their requests carry peer, the server the session was dialed to.
// The pool owns it; Shutdown and drop end it by closing sess.
func (p *Pool) serveStreams(sess *yamux.Session, peer Peer) {
	defer p.wg.Done()
	if p.streams != nil {
		p.streams.ServeSession(context.WithValue(p.ctx, peerKey{}, peer), sess)
	}
	for {
		st, err := sess.Accept()
		if err != nil {
			return
		}
		_ = st.Close()
	}
}
