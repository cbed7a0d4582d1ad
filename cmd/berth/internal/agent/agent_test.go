package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// syncBuffer is a bytes.Buffer safe for the agent's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestRun_Dev_ServesAndStopsCleanly(t *testing.T) {
	httpPort := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	exit := make(chan int, 1)
	go func() {
		exit <- Run(ctx, []string{"-dev", "-http-port", strconv.Itoa(httpPort),
			"-rpc-port", strconv.Itoa(freePort(t)), "-serf-port", strconv.Itoa(freePort(t))}, logs, logs)
	}()

	url := "http://127.0.0.1:" + strconv.Itoa(httpPort) + "/v1/status/leader"
	deadline := time.Now().Add(30 * time.Second)
	leader := ""
	for leader == "" && time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&leader)
			resp.Body.Close()
		}
		if leader == "" {
			time.Sleep(20 * time.Millisecond)
		}
	}
	must.NotEq(t, "", leader, must.Sprintf("dev agent never elected itself; logs:\n%s", logs.String()))

	cancel()
	select {
	case code := <-exit:
		must.EqOp(t, 0, code, must.Sprint(logs.String()))
	case <-time.After(30 * time.Second):
		t.Fatal("dev agent did not stop after its context ended")
	}
}
