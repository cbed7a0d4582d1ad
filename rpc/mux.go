package rpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// DefaultFirstByteTimeout is how long a new connection may stay silent
// before it says its type.
const DefaultFirstByteTimeout = 5 * time.Second

// Mux accepts connections on one listener and hands each to the handler of
// the type its first byte names.
type Mux struct {
	// FirstByteTimeout bounds the wait for the type byte, so a silent
	// connection cannot pin a goroutine. Set it before Serve.
	FirstByteTimeout time.Duration

	logger hclog.Logger
	l      net.Listener

	mu       sync.RWMutex
	handlers map[byte]func(net.Conn)
}

// NewMux returns a Mux over l with no handlers.
func NewMux(logger hclog.Logger, l net.Listener) *Mux {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Mux{
		FirstByteTimeout: DefaultFirstByteTimeout,
		logger:           logger.Named("rpc_mux"),
		l:                l,
		handlers:         map[byte]func(net.Conn){},
	}
}

// Handle routes connections of type t to fn. fn runs on its own goroutine,
// owns the conn (the type byte already read) and must close it; Serve does
// not wait for it, so fn's owner must give it a stop path. A later Handle
// for the same type replaces the earlier one.
func (m *Mux) Handle(t byte, fn func(net.Conn)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlers[t] = fn
}

// Addr is the listener's address.
func (m *Mux) Addr() net.Addr { return m.l.Addr() }

// Serve accepts until ctx ends (it returns nil) or the listener fails or is
// closed by someone else (it returns that error). It closes the listener and
// waits for the first-byte reads it started, never for the handlers.
func (m *Mux) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = m.l.Close() })
	defer stop()
	defer m.l.Close()

	var handshakes sync.WaitGroup
	defer handshakes.Wait()

	var backoff time.Duration
	for {
		conn, err := m.l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("rpc: listener %s closed: %w", m.l.Addr(), err)
			}
			// Out of file descriptors and the like: wait and retry.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			m.logger.Error("accept failed", "error", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-ctx.Done():
				return nil
			}
		}
		backoff = 0
		handshakes.Add(1)
		go func() {
			fn := m.handshake(ctx, conn)
			handshakes.Done()
			if fn != nil {
				fn(conn)
			}
		}()
	}
}

// handshake reads conn's type byte and returns its handler, or closes conn
// and returns nil.
func (m *Mux) handshake(ctx context.Context, conn net.Conn) func(net.Conn) {
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	_ = conn.SetReadDeadline(time.Now().Add(m.FirstByteTimeout))
	var b [1]byte
	_, err := io.ReadFull(conn, b[:])
	if !stop() {
		return nil // Serve is stopping and closed conn
	}
	if err != nil {
		m.logger.Debug("no connection type received", "remote_addr", remoteAddr(conn), "error", err)
		_ = conn.Close()
		return nil
	}
	_ = conn.SetReadDeadline(time.Time{})

	m.mu.RLock()
	fn := m.handlers[b[0]]
	m.mu.RUnlock()
	if fn == nil {
		if b[0] == TypeTLS {
			m.logger.Warn("tls connections are not served yet: closing", "remote_addr", remoteAddr(conn))
		} else {
			m.logger.Warn("unknown connection type: closing", "type", connTypeName(b[0]), "remote_addr", remoteAddr(conn))
		}
		_ = conn.Close()
		return nil
	}
	return fn
}
