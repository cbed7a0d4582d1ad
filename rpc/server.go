package rpc

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
)

// DefaultFrameTimeout bounds how long the rest of a request may take to
// arrive once its first byte has: a MaxFrameSize request at 560 KB/s. The
// wait for a request to start is not bounded; a connection may idle
// between calls. Within it, the request must not stall (frame_read.go).
const DefaultFrameTimeout = 30 * time.Second

// Server serves registered receivers over connections (ServeConn), yamux
// sessions (ServeMultiplex, ServeSession) and in process (Call).
type Server struct {
	logger       hclog.Logger
	frameTimeout time.Duration
	stallTimeout time.Duration
	// budget bounds the bytes the requests being read hold together
	// (frame_budget.go).
	budget *frameBudget
	// forwardRole, when set, is the certificate role a request that says
	// it was forwarded must come from (WithForwardedRole).
	forwardRole tlsutil.Role
	// intercept, when set, runs around every method (WithInterceptor).
	intercept Interceptor

	mu       sync.RWMutex
	services map[string]*service

	// ctx ends at Shutdown; every serving goroutine watches it.
	ctx    context.Context
	cancel context.CancelFunc

	stateMu  sync.Mutex // guards shutdown and the Add side of wg
	shutdown bool
	wg       sync.WaitGroup // ServeConn/ServeSession/ServeMultiplex/Call in progress

	// framesRefused counts the requests refused for want of room in the
	// budget (answered Unavailable, or their connection closed when not
	// even their header fitted); framesTimedOut those cut off by a stall
	// or the frame timeout. Read by tests, as Mux's accepted and refused
	// are. dropLog paces the log lines they make.
	framesRefused  atomic.Uint64
	framesTimedOut atomic.Uint64
	dropLog        logLimiter
}

// ServerOption configures a Server.
type ServerOption func(*Server)

// WithFrameTimeout sets how long the rest of a request may take to arrive
// once its first byte has; d <= 0 keeps DefaultFrameTimeout. A peer that
// is slower inside a request loses its connection (or its stream, over a
// yamux session). WithFrameStallTimeout bounds a silence within it.
func WithFrameTimeout(d time.Duration) ServerOption {
	return func(s *Server) {
		if d > 0 {
			s.frameTimeout = d
		}
	}
}

// WithForwardedRole makes the server refuse a request that says another
// server forwarded it (its args' IsForwarded() is true) unless it arrived
// over TLS from a certificate of role: so that only servers may forward,
// and a client certificate cannot pass for a server forwarding a call. A
// refusal is PermissionDenied, and logged with the peer's address.
// In-process calls (Call) are not checked.
func WithForwardedRole(role tlsutil.Role) ServerOption {
	return func(s *Server) { s.forwardRole = role }
}

// forwardedRequest is the args of a request that may be forwarded.
type forwardedRequest interface{ IsForwarded() bool }

// checkForwarded applies WithForwardedRole to a request that came over a
// connection.
func (s *Server) checkForwarded(ctx context.Context, serviceMethod string, args any) error {
	if s.forwardRole == tlsutil.RoleNone {
		return nil
	}
	fr, ok := args.(forwardedRequest)
	if !ok || !fr.IsForwarded() {
		return nil
	}
	peer, _ := PeerFromContext(ctx)
	if peer.Role == s.forwardRole {
		return nil
	}
	s.logger.Warn("refusing forwarded request: the peer's certificate is not a server's",
		"method", serviceMethod, "remote_addr", peer.Addr, "role", string(peer.Role))
	return structs.NewError(structs.CodePermissionDenied,
		"rpc: %s: only a %s certificate may forward requests", serviceMethod, s.forwardRole)
}

// NewServer returns a server with no services.
func NewServer(logger hclog.Logger, opts ...ServerOption) *Server {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		logger:       logger.Named("rpc"),
		frameTimeout: DefaultFrameTimeout,
		stallTimeout: DefaultFrameStallTimeout,
		budget:       newFrameBudget(DefaultFrameBudget()),
		services:     map[string]*service{},
		ctx:          ctx,
		cancel:       cancel,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Register serves rcvr's methods as "name.Method". Methods of these forms
// are served, others ignored (as in net/rpc):
//
//	func (t *T) Method(args *A, reply *R) error
//	func (t *T) Method(ctx context.Context, args *A, reply *R) error
//
// The ctx ends when the caller hangs up, its deadline passes or the server
// shuts down. Register fails on an empty or duplicate name and on a
// receiver with no servable method.
func (s *Server) Register(name string, rcvr any) error {
	svc, err := newService(name, rcvr)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.services[name]; dup {
		return fmt.Errorf("%w: %s already registered", ErrBadService, name)
	}
	s.services[name] = svc
	return nil
}

// Shutdown stops serving: it closes every connection and session being
// served, cancels the contexts of methods in flight and waits for them to
// return. Later serve calls close their connection at once and later Calls
// fail Unavailable. It is safe to call more than once.
func (s *Server) Shutdown() {
	s.stateMu.Lock()
	s.shutdown = true
	s.stateMu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// untilShutdown derives from ctx a context that also ends when the server
// shuts down. cancel ends it and releases the link to the server.
func (s *Server) untilShutdown(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// enter counts one serving goroutine in, unless the server is shut down.
func (s *Server) enter() bool {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	if s.shutdown {
		return false
	}
	s.wg.Add(1)
	return true
}

// ServeConn serves RPC requests on conn until the peer hangs up, ctx ends
// or the server shuts down, then closes conn. Requests are served
// concurrently; responses are written whole, one at a time. When the peer
// stops sending (EOF) it is taken to have hung up: the contexts of its
// methods in flight are cancelled. The peer may idle between requests, but
// once one starts it must arrive whole within the frame timeout and within
// MaxFrameSize, and never stall longer than the stall timeout; otherwise
// conn is closed and the reason logged with the peer's address. A request
// that finds no room in the frame budget is answered Unavailable, unrun.
// Its requests carry conn's Peer (PeerFromContext), unless ctx names one
// already (a stream of a session).
func (s *Server) ServeConn(ctx context.Context, conn net.Conn) {
	if !s.enter() {
		_ = conn.Close()
		return
	}
	defer s.wg.Done()

	ctx, cancel := s.untilShutdown(ctx)
	defer cancel()
	ctx = withPeer(ctx, conn)
	stopClose := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stopClose()

	sc := &serverConn{conn: conn}
	fr := newFrameReader(conn, s.stallTimeout, s.frameTimeout)
	var inflight sync.WaitGroup
	for {
		req, err := s.readRequest(ctx, fr)
		if err != nil {
			s.logReadError(conn, err)
			break
		}
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			s.serveRequest(ctx, sc, &req)
		}()
	}
	cancel()
	inflight.Wait()
	_ = conn.Close()
}

// serveRequest decodes, dispatches and answers one request, or answers its
// refusal.
func (s *Server) serveRequest(ctx context.Context, sc *serverConn, req *request) {
	defer req.release()
	h := &req.h
	if h.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(h.Timeout))
		defer cancel()
	}
	resp := header{ServiceMethod: h.ServiceMethod, Seq: h.Seq}
	var out []byte
	var err error
	if req.refused != nil {
		err = structs.NewError(structs.CodeUnavailable, "rpc: %s refused before it ran: %v", h.ServiceMethod, req.refused)
	} else {
		out, err = s.dispatchWire(ctx, h.ServiceMethod, req)
	}
	if err != nil {
		resp.Error, resp.Code = wireError(err)
		out = nil
	}
	frame, err := appendFrame(nil, &resp, out)
	if err != nil {
		// The reply (or the error) does not fit a frame: say so instead.
		resp.Error, resp.Code = wireError(structs.NewError(structs.CodeInternal, "rpc: %s: reply: %v", h.ServiceMethod, err))
		frame, err = appendFrame(nil, &resp, nil)
	}
	if err == nil {
		err = sc.write(frame)
	}
	if err != nil {
		s.logger.Debug("write response failed", "method", h.ServiceMethod, "remote_addr", remoteAddr(sc.conn), "error", err)
		_ = sc.conn.Close() // the read loop ends and the conn is torn down
	}
}

// dispatchWire decodes req's body into the method's args, calls it and
// encodes the reply. The body is dropped, and its room in the frame budget
// given back, once it is decoded (or found to be for no method).
func (s *Server) dispatchWire(ctx context.Context, serviceMethod string, req *request) ([]byte, error) {
	body := req.body
	req.body = nil
	svc, mt, err := s.lookup(serviceMethod)
	if err != nil {
		req.release()
		return nil, err
	}
	arg, target := mt.newArgs()
	err = decodeBody(body, target)
	req.release()
	if err != nil {
		return nil, structs.NewError(structs.CodeBadRequest, "rpc: %s: decode args: %v", serviceMethod, err)
	}
	if err := s.checkForwarded(ctx, serviceMethod, target); err != nil {
		return nil, err
	}
	reply := mt.newReply()
	if err := s.invoke(ctx, svc, mt, serviceMethod, arg, reply); err != nil {
		return nil, err
	}
	out, err := encode(reply.Interface())
	if err != nil {
		return nil, structs.NewError(structs.CodeInternal, "rpc: %s: encode reply: %v", serviceMethod, err)
	}
	return out, nil
}

// Call dispatches one call in process, with the network's semantics:
// unknown methods are BadRequest, panics are recovered into Internal, and
// the method's error comes back as a *structs.Error with its code. args may
// be the method's args type, its pointer or its element; reply must be the
// method's reply pointer type (or nil to discard the reply). The method
// sees ctx, cut short if the server shuts down.
func (s *Server) Call(ctx context.Context, method string, args, reply any) error {
	if !s.enter() {
		return structs.NewError(structs.CodeUnavailable, "rpc: call %s: server shut down", method)
	}
	defer s.wg.Done()
	svc, mt, err := s.lookup(method)
	if err != nil {
		return err
	}
	arg, ok := mt.inProcessArgs(args)
	if !ok {
		return structs.NewError(structs.CodeBadRequest, "rpc: %s: args are %T, want %s", method, args, mt.argType)
	}
	var rv reflect.Value
	if reply == nil {
		rv = mt.newReply()
	} else if rv = reflect.ValueOf(reply); rv.Type() != mt.replyType || rv.IsNil() {
		return structs.NewError(structs.CodeBadRequest, "rpc: %s: reply is %T, want non-nil %s", method, reply, mt.replyType)
	}
	ctx, cancel := s.untilShutdown(ctx)
	defer cancel()
	if err := s.invoke(ctx, svc, mt, method, arg, rv); err != nil {
		return structs.ToError(err) // flattened, as it would arrive over the wire
	}
	return nil
}

// lookup finds "Service.Method"; an unknown one is BadRequest.
func (s *Server) lookup(serviceMethod string) (*service, *methodType, error) {
	name, method, err := splitMethod(serviceMethod)
	if err != nil {
		return nil, nil, err
	}
	s.mu.RLock()
	svc := s.services[name]
	s.mu.RUnlock()
	if svc == nil {
		return nil, nil, structs.NewError(structs.CodeBadRequest, "rpc: unknown method %q: no service %q", serviceMethod, name)
	}
	mt := svc.methods[method]
	if mt == nil {
		return nil, nil, structs.NewError(structs.CodeBadRequest, "rpc: unknown method %q", serviceMethod)
	}
	return svc, mt, nil
}

// invoke calls the method, recovering a panic into an Internal error that
// names it, and records the call (metrics.go).
func (s *Server) invoke(ctx context.Context, svc *service, mt *methodType, serviceMethod string, arg, reply reflect.Value) (err error) {
	defer observe(serviceMethod, arg, time.Now(), &err) // after the recover below
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("rpc method panicked", "method", serviceMethod, "panic", r, "stack", string(debug.Stack()))
			err = structs.NewError(structs.CodeInternal, "rpc: %s panicked: %v", serviceMethod, r)
		}
	}()
	call := func(ctx context.Context) error {
		in := make([]reflect.Value, 0, 4)
		in = append(in, svc.rcvr)
		if mt.withCtx {
			in = append(in, reflect.ValueOf(&ctx).Elem())
		}
		in = append(in, arg, reply)
		out := mt.method.Func.Call(in)
		e, _ := out[0].Interface().(error)
		return e
	}
	if s.intercept != nil {
		err = s.intercept(ctx, serviceMethod, arg.Interface(), reply.Interface(), call)
	} else {
		err = call(ctx)
	}
	if err != nil {
		return methodError(serviceMethod, err)
	}
	return nil
}

// serverConn serializes the responses written on one connection.
type serverConn struct {
	conn net.Conn
	mu   sync.Mutex
}

func (c *serverConn) write(frame []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.conn.Write(frame)
	return err
}

// remoteAddr names conn's peer for log lines.
func remoteAddr(conn net.Conn) string {
	if a := conn.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}
