package rpc

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/structs"
)

// dialFrom opens a connection of type typ to addr from the loopback
// address ip.
func dialFrom(t *testing.T, ip, addr string, typ byte) net.Conn {
	t.Helper()
	conn, err := dial(testCtx(t), addr, typ, net.ParseIP(ip), nil)
	must.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// assertServed asserts conn, a TypeRPC connection, is served.
func assertServed(t *testing.T, conn net.Conn) {
	t.Helper()
	var reply EchoReply
	must.NoError(t, CallConn(testCtx(t), conn, "Test.Echo", &EchoArgs{Name: "served"}, &reply),
		must.Sprintf("conn from %s", conn.LocalAddr()))
	must.Eq(t, "served", reply.Name)
}

// assertEchoes asserts conn, a TypeRaft connection to echoConn, is served.
func assertEchoes(t *testing.T, conn net.Conn) {
	t.Helper()
	must.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err := conn.Write([]byte("ping"))
	must.NoError(t, err)
	b := make([]byte, 4)
	_, err = io.ReadFull(conn, b)
	must.NoError(t, err)
	must.Eq(t, "ping", string(b))
}

// echoConn serves a connection by echoing it, as raft holds its own: until
// the peer hangs up.
func echoConn(c net.Conn) {
	defer c.Close()
	_, _ = io.Copy(c, c)
}

// admittedFrom dials from ip until a connection is served: a place freed by
// a peer hanging up is counted out when the server has seen it go, a
// moment later.
func admittedFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn := dialFrom(t, ip, addr, TypeRPC)
		var reply EchoReply
		err := CallConn(testCtx(t), conn, "Test.Echo", &EchoArgs{}, &reply)
		if err == nil {
			return conn
		}
		must.ErrorIs(t, err, structs.ErrUnavailable)
		if time.Now().After(deadline) {
			t.Fatalf("no connection from %s admitted: %v", ip, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMux_Serve_ConnCaps fills the per-IP and the total caps with
// connections of each kind (plain RPC, a pool's yamux session, a raft-like
// connection): the one past a cap is closed at once, without waiting for
// its type byte, and logged with its address; the earlier ones are still
// served; and a connection closed frees its place.
func TestMux_Serve_ConnCaps(t *testing.T) {
	const (
		ipA = "127.0.0.88" // fills the per-IP cap
		ipB = "127.0.0.89" // fills the total cap
		ipC = "127.0.0.90" // finds it full
	)
	logger, rec := recordedLogger(t)
	ts := startServerWith(t, "127.0.0.1:0", serverSetup{
		logger:   logger,
		mux:      []MuxOption{WithMaxConnsPerIP(2), WithMaxConns(4), WithFirstByteTimeout(time.Hour)},
		handlers: map[byte]func(net.Conn){TypeRaft: echoConn},
	})

	a1 := dialFrom(t, ipA, ts.addr, TypeRPC)
	assertServed(t, a1)
	a2 := dialFrom(t, ipA, ts.addr, TypeRaft)
	assertEchoes(t, a2)

	// Past the per-IP cap: closed though it never said its type.
	a3, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.ParseIP(ipA)}, mustTCPAddr(t, ts.addr))
	must.NoError(t, err)
	defer a3.Close()
	assertClosed(t, a3)
	must.StrContains(t, rec.String(), "remote_addr="+a3.LocalAddr().String())
	must.StrContains(t, rec.String(), errTooManyConnsFromIP.Error())

	pool := newPool(t, WithLocalIP(ipB))
	var reply EchoReply
	must.NoError(t, pool.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{}, &reply))
	b2 := dialFrom(t, ipB, ts.addr, TypeRPC)
	assertServed(t, b2)

	// Past the total cap.
	c1, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.ParseIP(ipC)}, mustTCPAddr(t, ts.addr))
	must.NoError(t, err)
	defer c1.Close()
	assertClosed(t, c1)
	must.StrContains(t, rec.String(), "remote_addr="+c1.LocalAddr().String())
	must.StrContains(t, rec.String(), errTooManyConns.Error())

	// The connections admitted are all still served.
	assertServed(t, a1)
	assertEchoes(t, a2)
	must.NoError(t, pool.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{}, &reply))
	assertServed(t, b2)

	// Closing the raft-like connection frees a place in all: C gets in.
	must.NoError(t, a2.Close())
	assertServed(t, admittedFrom(t, ipC, ts.addr))
	// Closing A's RPC connection frees a place for A (and the total).
	must.NoError(t, a1.Close())
	assertServed(t, admittedFrom(t, ipA, ts.addr))

	total, fromA := ts.mux.limits.open(ipA)
	must.Eq(t, 4, total)
	must.Eq(t, 1, fromA)
}

// TestMux_Serve_ConnCapsReleased: every way a connection ends (no type
// byte, an unknown type, a handler closing it, the peer hanging up, the
// server shutting down) gives its place back.
func TestMux_Serve_ConnCapsReleased(t *testing.T) {
	ts := startServerWith(t, "127.0.0.1:0", serverSetup{
		mux:      []MuxOption{WithMaxConns(100), WithFirstByteTimeout(100 * time.Millisecond)},
		handlers: map[byte]func(net.Conn){TypeRaft: echoConn},
	})

	silent, err := net.Dial("tcp", ts.addr)
	must.NoError(t, err)
	defer silent.Close()
	unknown := dialFrom(t, "127.0.0.1", ts.addr, 0x7f)
	rpcConn := dialFrom(t, "127.0.0.1", ts.addr, TypeRPC)
	assertServed(t, rpcConn)
	raftConn := dialFrom(t, "127.0.0.1", ts.addr, TypeRaft)
	assertEchoes(t, raftConn)
	pool := newPool(t)
	must.NoError(t, pool.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{}, &EchoReply{}))

	assertClosed(t, silent)
	assertClosed(t, unknown)
	must.NoError(t, rpcConn.Close())
	must.NoError(t, raftConn.Close())
	ts.stop() // the server closes the pool's session

	counted := func() int { total, _ := ts.mux.limits.open("127.0.0.1"); return total }
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return counted() == 0 }),
		wait.Timeout(10*time.Second), wait.Gap(10*time.Millisecond)),
		must.Func(func() string { return fmt.Sprintf("%d connections still counted", counted()) }))
}

func mustTCPAddr(t *testing.T, addr string) *net.TCPAddr {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", addr)
	must.NoError(t, err)
	return a
}

func TestNewMux_DefaultCaps(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer l.Close()

	defMax := DefaultMaxConns()
	cases := []struct {
		name                  string
		opts                  []MuxOption
		wantMax, wantByIP     int
		wantReserve, wantRsIP int
	}{
		{name: "defaults", wantMax: defMax, wantByIP: min(DefaultMaxConnsPerIP, defMax/2),
			wantReserve: defMax / 10, wantRsIP: min(DefaultReservedConnsPerIP, defMax/20)},
		{name: "small total halves the per-IP default", opts: []MuxOption{WithMaxConns(100)}, wantMax: 100, wantByIP: 50, wantReserve: 10, wantRsIP: 5},
		{name: "large total", opts: []MuxOption{WithMaxConns(100000)}, wantMax: 100000, wantByIP: DefaultMaxConnsPerIP,
			wantReserve: 10000, wantRsIP: DefaultReservedConnsPerIP},
		{name: "no total cap", opts: []MuxOption{WithMaxConns(0)}, wantMax: 0, wantByIP: DefaultMaxConnsPerIP, wantReserve: 0, wantRsIP: 1},
		{name: "explicit per-IP", opts: []MuxOption{WithMaxConns(10), WithMaxConnsPerIP(20)}, wantMax: 10, wantByIP: 20, wantReserve: 1, wantRsIP: 1},
		{name: "no per-IP cap", opts: []MuxOption{WithMaxConnsPerIP(-1)}, wantMax: defMax, wantByIP: 0,
			wantReserve: defMax / 10, wantRsIP: min(DefaultReservedConnsPerIP, defMax/20)},
		{name: "explicit reserve", opts: []MuxOption{WithMaxConns(100), WithReservedConns(40)}, wantMax: 100, wantByIP: 50, wantReserve: 40, wantRsIP: DefaultReservedConnsPerIP},
		{name: "reserve under the total", opts: []MuxOption{WithMaxConns(5), WithReservedConns(9)}, wantMax: 5, wantByIP: 2, wantReserve: 4, wantRsIP: 2},
		{name: "no reserve", opts: []MuxOption{WithMaxConns(100), WithReservedConns(0)}, wantMax: 100, wantByIP: 50, wantReserve: 0, wantRsIP: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMux(nil, l, tc.opts...)
			must.Eq(t, tc.wantMax, m.limits.max)
			must.Eq(t, tc.wantByIP, m.limits.maxPerIP)
			must.Eq(t, tc.wantReserve, m.limits.reserve)
			must.Eq(t, tc.wantRsIP, m.limits.reservePerIP)
		})
	}

	if n, ok := fdLimit(); ok {
		must.LessEq(t, max(int(min(n/2, 1<<40)), minMaxConns), DefaultMaxConns(), must.Sprint("at most half the fd limit"))
	}
	must.Between(t, minMaxConns, DefaultMaxConns(), maxMaxConns)
}
