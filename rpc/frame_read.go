package rpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// DefaultFrameStallTimeout is how long a request may go without a byte
// once it has started (or wait for room in the frame budget) before it
// costs its connection: a slowloris body is cut off after this much
// silence, and its room in the budget goes back.
const DefaultFrameStallTimeout = 5 * time.Second

// WithFrameStallTimeout sets how long a request being read may go without
// a byte, or wait for room in the frame budget (WithFrameBudget); d <= 0
// keeps DefaultFrameStallTimeout. The frame timeout (WithFrameTimeout)
// still bounds the whole request. Neither applies between requests.
func WithFrameStallTimeout(d time.Duration) ServerOption {
	return func(s *Server) {
		if d > 0 {
			s.stallTimeout = d
		}
	}
}

// request is one request read whole: its header, and either its body and
// the room the body holds in the frame budget until it is decoded, or the
// reason it was refused unread.
type request struct {
	h    header
	body []byte
	// release gives the request's room in the budget back; calling it
	// again does nothing.
	release func()
	// refused, when set, is why the body was dropped unread: the request
	// is answered with it and its method not called.
	refused error
}

// frameReader reads the requests of one served connection. Between
// requests it reads with no deadline: a connection may idle. Inside one
// (begin to finish) every read from the connection has a deadline: the
// stall timeout from now, never past the frame timeout from the request's
// first byte. It is owned by the connection's read loop.
type frameReader struct {
	conn           net.Conn
	br             *bufio.Reader // reads from conn through readConn
	stall, timeout time.Duration

	end      time.Time // the request's deadline; zero between requests
	armed    bool      // conn has a read deadline set
	got      int64     // bytes of the current request read
	declared int64     // the current request's length, once its prefix is read
}

func newFrameReader(conn net.Conn, stall, timeout time.Duration) *frameReader {
	f := &frameReader{conn: conn, stall: stall, timeout: timeout}
	f.br = bufio.NewReader(readerFunc(f.readConn))
	return f
}

// readerFunc makes a function an io.Reader.
type readerFunc func([]byte) (int, error)

func (r readerFunc) Read(p []byte) (int, error) { return r(p) }

// readConn reads from conn, under the request's deadlines when inside one.
func (f *frameReader) readConn(p []byte) (int, error) {
	if !f.end.IsZero() {
		deadline := time.Now().Add(f.stall)
		if deadline.After(f.end) {
			deadline = f.end
		}
		_ = f.conn.SetReadDeadline(deadline)
		f.armed = true
	}
	return f.conn.Read(p)
}

// Read reads the current request's bytes, counting them.
func (f *frameReader) Read(p []byte) (int, error) {
	n, err := f.br.Read(p)
	f.got += int64(n)
	return n, err
}

// begin starts a request: its first byte has arrived.
func (f *frameReader) begin() {
	f.end = time.Now().Add(f.timeout)
	f.got, f.declared = 0, 0
}

// finish ends a request: the connection may idle again.
func (f *frameReader) finish() {
	f.end = time.Time{}
	if f.armed {
		_ = f.conn.SetReadDeadline(time.Time{})
		f.armed = false
	}
}

// readRequest waits, without a deadline, for the first byte of the next
// request, then reads the request whole under the stall and frame
// timeouts. Once its length prefix is read it reserves the declared length
// in the frame budget, waiting up to the stall timeout (and while ctx
// lasts); if there is no room, the request is refused (refuseRequest).
func (s *Server) readRequest(ctx context.Context, f *frameReader) (request, error) {
	if _, err := f.br.Peek(1); err != nil {
		return request{}, err
	}
	f.begin()
	defer f.finish()
	hlen, blen, err := readPrefix(f)
	if err != nil {
		return request{}, s.frameError(f, err)
	}
	f.declared = int64(framePrefixLen + hlen + blen)
	release, err := s.budget.reserve(ctx, f.declared, s.stallTimeout)
	if errors.Is(err, errFrameBudget) {
		return s.refuseRequest(ctx, f, hlen, blen, err)
	}
	if err != nil {
		return request{}, err
	}
	h, err := readHeader(f, hlen)
	if err != nil {
		release()
		return request{}, s.frameError(f, err)
	}
	body, err := readReserved(f, blen)
	if err != nil {
		release()
		return request{}, s.frameError(f, err)
	}
	return request{h: h, body: body, release: release}, nil
}

// refuseRequest reads a request for which there was no room, holding only
// its header (small: it finds room unless the budget is all taken by small
// requests, and then the connection goes): the body is read and dropped,
// and the request answered with its refusal (Unavailable: the method never
// ran, and the caller may try again). So an honest caller learns at once,
// and its connection or session stays in step.
func (s *Server) refuseRequest(ctx context.Context, f *frameReader, hlen, blen int, cause error) (request, error) {
	s.framesRefused.Add(1)
	release, err := s.budget.reserve(ctx, int64(framePrefixLen+hlen), 0)
	if err != nil {
		return request{}, cause
	}
	h, err := readHeader(f, hlen)
	release()
	if err != nil {
		return request{}, s.frameError(f, err)
	}
	if err := skipN(f, blen); err != nil {
		return request{}, s.frameError(f, err)
	}
	if unlogged, ok := s.dropLog.allow(); ok {
		args := []any{"method", h.ServiceMethod, "remote_addr", remoteAddr(f.conn), "error", cause}
		if unlogged > 0 {
			args = append(args, "dropped_unlogged", unlogged)
		}
		s.logger.Warn("refusing request", args...)
	}
	return request{h: h, release: func() {}, refused: cause}, nil
}

// frameError names a read timeout inside a request (a stall or the frame
// timeout) and counts it.
func (s *Server) frameError(f *frameReader, err error) error {
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		return err
	}
	s.framesTimedOut.Add(1)
	read := fmt.Sprintf("%d bytes read, its length not yet", f.got)
	if f.declared > 0 {
		read = fmt.Sprintf("%d of %d bytes read", f.got, f.declared)
	}
	if time.Now().Before(f.end) {
		return fmt.Errorf("%w: no byte for %s (the stall timeout), %s: %w", errFrameStalled, s.stallTimeout, read, err)
	}
	return fmt.Errorf("%w: not whole within %s (the frame timeout), %s: %w", errFrameTimeout, s.frameTimeout, read, err)
}

// logReadError logs why a connection stopped, quietly for ordinary ends.
// A request dropped for a timeout or the budget is logged at most
// refusalLogBurst times a second, the next line counting the rest.
func (s *Server) logReadError(conn net.Conn, err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return
	case errors.Is(err, errFrameTimeout), errors.Is(err, errFrameStalled), errors.Is(err, errFrameBudget):
		if unlogged, ok := s.dropLog.allow(); ok {
			args := []any{"remote_addr", remoteAddr(conn), "error", err}
			if unlogged > 0 {
				args = append(args, "dropped_unlogged", unlogged)
			}
			s.logger.Warn("dropping connection: request not read", args...)
		}
	case errors.Is(err, errFrameTooLarge), errors.Is(err, errMalformedHeader):
		s.logger.Warn("dropping connection: bad request", "remote_addr", remoteAddr(conn), "error", err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		s.logger.Info("connection closed inside a request", "remote_addr", remoteAddr(conn))
	default:
		s.logger.Debug("connection read failed", "remote_addr", remoteAddr(conn), "error", err)
	}
}
