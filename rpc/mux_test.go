package rpc

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
)

// startMux serves a Mux on 127.0.0.1 until the test ends.
func startMux(t *testing.T, setup func(*Mux), opts ...MuxOption) (addr string, stop func() error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	m := NewMux(testlog.Logger(t, "test"), l, opts...)
	setup(m)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- m.Serve(ctx) }()
	stopped := false
	var result error
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-served
		}
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return l.Addr().String(), stop
}

func TestMux_Serve_Dispatch(t *testing.T) {
	got := make(chan []byte, 1)
	addr, _ := startMux(t, func(m *Mux) {
		m.Handle(TypeRaft, func(c net.Conn) {
			defer c.Close()
			b := make([]byte, 5)
			_, _ = io.ReadFull(c, b)
			got <- b
		})
	})
	conn, err := Dial(testCtx(t), addr, TypeRaft)
	must.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("hello"))
	must.NoError(t, err)
	select {
	case b := <-got:
		must.Eq(t, "hello", string(b), must.Sprint("the handler reads what follows the type byte"))
	case <-time.After(10 * time.Second):
		t.Fatal("handler never ran")
	}
}

func TestMux_Serve_ClosesUnserved(t *testing.T) {
	cases := []struct {
		name  string
		write []byte
	}{
		{name: "unknown type", write: []byte{0x7f, 1, 2, 3}},
		{name: "tls while tls is off", write: []byte{TypeTLS}},
		{name: "type with no handler", write: []byte{TypeRaft}},
		{name: "silent", write: nil},
	}
	addr, _ := startMux(t, func(m *Mux) {
		m.Handle(TypeRPC, func(c net.Conn) { c.Close() })
	}, WithFirstByteTimeout(200*time.Millisecond))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			must.NoError(t, err)
			defer conn.Close()
			if tc.write != nil {
				_, err = conn.Write(tc.write)
				must.NoError(t, err)
			}
			must.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
			_, err = conn.Read(make([]byte, 1))
			must.True(t, errors.Is(err, io.EOF) || isReset(err), must.Sprintf("want the conn closed, got %v", err))
		})
	}
}

func TestMux_Serve_Stops(t *testing.T) {
	t.Run("context ends", func(t *testing.T) {
		addr, stop := startMux(t, func(*Mux) {})
		// A connection mid-handshake does not hold Serve up.
		conn, err := net.Dial("tcp", addr)
		must.NoError(t, err)
		defer conn.Close()
		must.NoError(t, stop())
		_, err = net.DialTimeout("tcp", addr, time.Second)
		must.Error(t, err, must.Sprint("the listener is closed"))
	})
	t.Run("listener closed", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must.NoError(t, err)
		m := NewMux(testlog.Logger(t, "test"), l)
		served := make(chan error, 1)
		go func() { served <- m.Serve(context.Background()) }()
		must.NoError(t, l.Close())
		must.ErrorIs(t, <-served, net.ErrClosed)
	})
}

// TestMux_Serve_FirstByteDeadline: a connection that never says its type
// is closed after the first-byte timeout, and the log names it; one that
// says it in time is served past that timeout.
func TestMux_Serve_FirstByteDeadline(t *testing.T) {
	logger, rec := recordedLogger(t)
	ts := startServerWith(t, "127.0.0.1:0", serverSetup{
		logger: logger,
		mux:    []MuxOption{WithFirstByteTimeout(150 * time.Millisecond)},
	})

	silent, err := net.Dial("tcp", ts.addr)
	must.NoError(t, err)
	defer silent.Close()
	served, err := Dial(testCtx(t), ts.addr, TypeRPC)
	must.NoError(t, err)
	defer served.Close()

	assertClosed(t, silent)
	must.StrContains(t, rec.String(), "no connection type received: remote_addr="+silent.LocalAddr().String())
	must.StrContains(t, rec.String(), "first_byte_timeout=150ms")

	var reply EchoReply
	must.NoError(t, CallConn(testCtx(t), served, "Test.Echo", &EchoArgs{Name: "in time"}, &reply))
	must.Eq(t, "in time", reply.Name)
}
