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
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

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
	deadline := time.Now().Add(20 * time.Second)
	for m.accepted.Load() < uint64(n) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
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
