//go:build linux

package rpc

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/internal/testlog"
)

// floodAddrEnv tells the test binary, run again as TestFloodHelper, where
// to send its flood.
const floodAddrEnv = "BERTH_RPC_FLOOD_ADDR"

// floodIPs are the loopback addresses the flood comes from: more than one,
// so that it reaches the total cap and not only the per-IP one.
var floodIPs = []string{"127.0.0.91", "127.0.0.92", "127.0.0.93", "127.0.0.94"}

// TestMux_Serve_FloodSparesHTTP is issue 11's outage: a flood of idle RPC
// connections took every file descriptor, and the HTTP API went down with
// the RPC listener. Under a low fd limit, with the default caps, another
// process opens twice as many connections as the process may hold files;
// the Mux holds at most its cap of them and an HTTP server in the same
// process still answers.
func TestMux_Serve_FloodSparesHTTP(t *testing.T) {
	var orig syscall.Rlimit
	must.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig))
	limit := uint64(openFDs(t) + 256)
	if orig.Cur < limit {
		t.Skipf("fd limit %d is already below %d", orig.Cur, limit)
	}
	low := orig
	low.Cur = limit
	must.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low))
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig) })

	httpL, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	httpSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})}
	go func() { _ = httpSrv.Serve(httpL) }()
	t.Cleanup(func() { _ = httpSrv.Close() })

	// The Mux takes its default caps from the lowered limit.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	m := NewMux(testlog.Logger(t, "test"), l)
	must.LessEq(t, int(limit/2), m.limits.max)
	m.Handle(TypeRPC, func(c net.Conn) { // hold it, as an idle RPC client does
		defer c.Close()
		_, _ = io.Copy(io.Discard, c)
	})
	serveCtx := testCtx(t)
	served := make(chan error, 1)
	go func() { served <- m.Serve(serveCtx) }()

	n := int(2 * limit)
	flood := exec.Command(os.Args[0], "-test.run=^TestFloodHelper$")
	flood.Env = append(os.Environ(), floodAddrEnv+"="+l.Addr().String(), "BERTH_RPC_FLOOD_N="+strconv.Itoa(n))
	flood.Stderr = os.Stderr
	stdin, err := flood.StdinPipe()
	must.NoError(t, err)
	stdout, err := flood.StdoutPipe()
	must.NoError(t, err)
	must.NoError(t, flood.Start())
	t.Cleanup(func() {
		_ = stdin.Close() // the helper hangs up and exits
		_ = flood.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	must.NoError(t, err)
	must.Eq(t, fmt.Sprintf("flooding: %d\n", n), line)

	// Wait (bounded) until the Mux has accepted the whole flood: without
	// caps it never does, stuck out of descriptors.
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return m.accepted.Load() >= uint64(n) }),
		wait.Timeout(20*time.Second), wait.Gap(20*time.Millisecond)),
		must.Func(func() string {
			return fmt.Sprintf("the Mux accepted %d of %d flood connections (refused %d)", m.accepted.Load(), n, m.refused.Load())
		}))
	held, _ := m.limits.open("")
	t.Logf("fd limit %d: accepted %d, refused %d, holding %d (cap %d, per IP %d)",
		limit, m.accepted.Load(), m.refused.Load(), held, m.limits.max, m.limits.maxPerIP)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for range 5 {
		resp, err := client.Get("http://" + httpL.Addr().String())
		must.NoError(t, err, must.Sprint("the HTTP API is up through the flood"))
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		must.Eq(t, "ok", string(body))
	}

	must.Eq(t, uint64(n), m.accepted.Load(), must.Sprint("every flood connection accepted and judged"))
	held, _ = m.limits.open("")
	must.LessEq(t, m.limits.max, held)
	must.Positive(t, m.refused.Load())
}

// TestFloodHelper is not a test: TestMux_Serve_FloodSparesHTTP runs the test
// binary again as this, to flood from another process (a flood from the
// same one would spend its descriptors too). It opens the connections,
// says so on stdout, and holds them until stdin closes.
func TestFloodHelper(t *testing.T) {
	addr := os.Getenv(floodAddrEnv)
	if addr == "" {
		t.Skip("run by TestMux_Serve_FloodSparesHTTP")
	}
	n, err := strconv.Atoi(os.Getenv("BERTH_RPC_FLOOD_N"))
	must.NoError(t, err)
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for i := range n {
		d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(floodIPs[i%len(floodIPs)])}}
		c, err := d.Dial("tcp", addr)
		must.NoError(t, err)
		conns = append(conns, c)
		_, _ = c.Write([]byte{TypeRPC}) // refused ones may be closed already
	}
	fmt.Printf("flooding: %d\n", n)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	must.NoError(t, err)
	return len(fds)
}

// TestServer_FrameFlood is issue 26's memory flood: connections from
// several addresses each declare a request of 16 MiB less 64 bytes, send
// 15 MiB of it and stall. The requests being read never hold more than
// the frame budget, by its own count and by the live heap (without the
// budget, they would hold 8 x 16 MiB); a client's calls go through during
// the flood; and every flood connection is closed for its stall, those
// that found no room too (their bodies read and dropped).
func TestServer_FrameFlood(t *testing.T) {
	const (
		budget = 40 << 20 // large requests may hold 35 MiB: two flood requests at once
		stall  = 2 * time.Second
		conns  = 8
		sent   = 15 << 20
		// slack is the live heap besides the requests' budget: buffers and
		// sessions, and a body given back and replaced by another within
		// one collection (so still marked), for each of the two places.
		slack = 2*MaxFrameSize + 8<<20
	)
	logger, rec := recordedLogger(t)
	ts := startServerWith(t, "127.0.0.1:0", serverSetup{
		logger: logger,
		server: []ServerOption{WithFrameBudget(budget), WithFrameStallTimeout(stall), WithFrameTimeout(time.Hour)},
	})
	p := newPool(t)
	var reply EchoReply
	must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: "before"}, &reply))

	prefix, _ := floodPrefix(t)
	payload := make([]byte, sent)
	base := liveHeap()
	sampled := sampleLiveHeap(t, 50*time.Millisecond)

	flood := make([]net.Conn, conns)
	for i := range flood {
		c := dialFrom(t, floodIPs[i%len(floodIPs)], ts.addr, TypeRPC)
		flood[i] = c
		go func() { // ends when c is closed, by the server or the test
			_ = c.SetWriteDeadline(time.Now().Add(time.Minute))
			if _, err := c.Write(prefix); err == nil {
				_, _ = c.Write(payload)
			}
		}()
	}

	waitFor(t, "a flood request holding its room", func() bool { return ts.srv.budget.heldNow() >= floodFrameLen })
	for i := range 5 {
		name := fmt.Sprintf("during %d", i)
		must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: name}, &reply), must.Sprint("a client's call during the flood"))
		must.Eq(t, name, reply.Name)
	}

	for _, c := range flood {
		assertClosed(t, c)
	}
	peakHeap := sampled()
	t.Logf("budget %d MiB: peak held %.1f MiB, live heap +%.1f MiB at most; %d requests refused, %d stalled",
		budget>>20, float64(ts.srv.budget.peakHeld())/(1<<20), float64(peakHeap-base)/(1<<20),
		ts.srv.framesRefused.Load(), ts.srv.framesTimedOut.Load())

	must.LessEq(t, int64(budget), ts.srv.budget.peakHeld(), must.Sprint("the budget's own count"))
	must.GreaterEq(t, int64(floodFrameLen), ts.srv.budget.peakHeld())
	must.LessEq(t, uint64(budget+slack), peakHeap-min(base, peakHeap), must.Sprint("the live heap"))
	must.Eq(t, conns, ts.srv.framesTimedOut.Load(), must.Sprint("every flood connection closed for its stall"))
	must.StrContains(t, rec.String(), errFrameStalled.Error())
	waitFor(t, "every room given back", func() bool { return ts.srv.budget.heldNow() == 0 })
	must.NoError(t, p.Call(testCtx(t), ts.addr, "Test.Echo", &EchoArgs{Name: "after"}, &reply))
}

// liveHeap is the heap's live bytes, right after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// sampleLiveHeap samples liveHeap every gap until the returned function is
// called, which returns the highest sample.
func sampleLiveHeap(t *testing.T, gap time.Duration) func() uint64 {
	stop := make(chan struct{})
	peak := make(chan uint64, 1)
	go func() {
		var most uint64
		tick := time.NewTicker(gap)
		defer tick.Stop()
		for {
			most = max(most, liveHeap())
			select {
			case <-stop:
				peak <- most
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	var most uint64
	sampled := func() uint64 {
		once.Do(func() {
			close(stop)
			most = <-peak
		})
		return most
	}
	t.Cleanup(func() { sampled() })
	return sampled
}

// TestMux_Serve_FloodSparesRaft is issue 26's lock-out: idle connections
// from several addresses take every general place, yet a raft connection
// still gets in, to a reserved place. Anonymous connections past the
// general places are closed: those that name their type at once, and
// those that say nothing past the few reserved places one address may
// hold. (Under TLS, a server's certificate gets in too:
// TestTLS_ReservedConns.)
func TestMux_Serve_FloodSparesRaft(t *testing.T) {
	const (
		maxConns = 40
		reserve  = 8 // four from one address
		general  = maxConns - reserve
		silentIP = "127.0.0.95"
		raftIP   = "127.0.0.96"
		otherIP  = "127.0.0.97"
	)
	logger, rec := recordedLogger(t)
	ts := startServerWith(t, "127.0.0.1:0", serverSetup{
		logger:   logger,
		mux:      []MuxOption{WithMaxConns(maxConns), WithReservedConns(reserve), WithFirstByteTimeout(time.Hour)},
		handlers: map[byte]func(net.Conn){TypeRaft: echoConn},
	})
	must.Eq(t, 4, ts.mux.limits.reservePerIP)

	for i := range general {
		assertServed(t, dialFrom(t, floodIPs[i%len(floodIPs)], ts.addr, TypeRPC))
	}
	total, _ := ts.mux.limits.open("")
	must.Eq(t, general, total)
	must.Eq(t, 0, ts.mux.limits.openReserved())

	// Past the general places, idle connections that name their type are
	// closed once they have; silent ones hold a reserved place, four from
	// one address, until their first-byte timeout; more are closed at
	// once. (Few enough that every refusal is logged.)
	for _, ip := range floodIPs {
		assertClosed(t, dialFrom(t, ip, ts.addr, TypeRPC))
	}
	var silent []net.Conn
	for range 6 {
		c, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.ParseIP(silentIP)}, mustTCPAddr(t, ts.addr))
		must.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		silent = append(silent, c)
	}
	for _, c := range silent[4:] {
		assertClosed(t, c)
	}
	waitFor(t, "the silent connections in reserved places", func() bool { return ts.mux.limits.openReserved() == 4 })

	raft := dialFrom(t, raftIP, ts.addr, TypeRaft)
	assertEchoes(t, raft)
	must.Eq(t, 5, ts.mux.limits.openReserved())

	// An anonymous RPC connection from a new address is not let in.
	other := dialFrom(t, otherIP, ts.addr, TypeRPC)
	assertClosed(t, other)
	logs := rec.String()
	must.StrContains(t, logs, "remote_addr="+other.LocalAddr().String())
	must.StrContains(t, logs, errReservedConns.Error()+" for raft and for certificates of role [server], not a plain-text connection of type rpc")
	must.StrContains(t, logs, "and "+silentIP+" holds 4 of the 8 reserved ones, limit 4 from one address")

	// The raft connection is still served.
	assertEchoes(t, raft)
	waitFor(t, "the general places and five reserved ones held", func() bool {
		total, _ := ts.mux.limits.open("")
		return total == general+5 && ts.mux.limits.openReserved() == 5
	})
}
