package rpc

import (
	"context"
	"net"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"
)

// sessionKey carries the yamux session a request arrived on.
type sessionKey struct{}

// SessionFromContext returns the yamux session the current request arrived
// on, when it came over ServeMultiplex or ServeSession. A server endpoint
// uses it to remember the session a client opened, to call the client back
// on it later with CallSession.
func SessionFromContext(ctx context.Context) (*yamux.Session, bool) {
	s, ok := ctx.Value(sessionKey{}).(*yamux.Session)
	return s, ok
}

// ServeMultiplex runs a yamux server session on conn, whose TypeMultiplex
// byte has been read, and serves every stream the peer opens as an RPC
// connection. onSession, when not nil, is called once with the session
// before any stream is served; it must not block. The session can be used
// to call the peer back (CallSession); its CloseChan says when it ends.
// Its requests carry conn's Peer (PeerFromContext). ServeMultiplex
// returns, with the session closed, when the peer goes away,
// ctx ends or the server shuts down.
func (s *Server) ServeMultiplex(ctx context.Context, conn net.Conn, onSession func(*yamux.Session)) {
	if !s.enter() {
		_ = conn.Close()
		return
	}
	defer s.wg.Done()

	sess, err := yamux.Server(conn, yamuxConfig(s.logger))
	if err != nil {
		s.logger.Error("cannot start yamux session", "remote_addr", remoteAddr(conn), "error", err)
		_ = conn.Close()
		return
	}
	defer sess.Close()
	ctx, cancel := s.untilShutdown(ctx)
	defer cancel()
	// The streams are yamux's; who sent them is conn's peer.
	ctx = withPeer(ctx, conn)
	stopClose := context.AfterFunc(ctx, func() { _ = sess.Close() })
	defer stopClose()

	if onSession != nil {
		onSession(sess)
	}
	s.ServeSession(ctx, sess)
}

// ServeSession serves every stream the peer opens on sess as an RPC
// connection until sess closes, ctx ends or the server shuts down, then
// waits for those streams to finish. It does not close sess: its owner does
// (ServeMultiplex on a server, the Pool on a client).
func (s *Server) ServeSession(ctx context.Context, sess *yamux.Session) {
	if !s.enter() {
		return
	}
	defer s.wg.Done()

	ctx, cancel := s.untilShutdown(ctx)
	defer cancel()
	ctx = context.WithValue(ctx, sessionKey{}, sess)

	var streams sync.WaitGroup
	defer streams.Wait()
	for {
		st, err := sess.AcceptStreamWithContext(ctx)
		if err != nil {
			return
		}
		streams.Add(1)
		go func() {
			defer streams.Done()
			s.ServeConn(ctx, st)
		}()
	}
}

// yamuxConfig is the session configuration both sides use, logging through
// logger.
func yamuxConfig(logger hclog.Logger) *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = nil
	cfg.Logger = logger.Named("yamux").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	return cfg
}
