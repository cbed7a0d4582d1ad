package server

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// An RPC connection accepted while raft is not yet set up (a server just
// restarted) is served only once it is: before, a client's heartbeat
// reached leaderAddr with s.raft nil and panicked.
func TestServer_AfterRaft_WaitsForRaft(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := &Server{ctx: ctx, raftReady: make(chan struct{})}
	must.EqOp(t, "", s.leaderAddr(), must.Sprint("no raft: no leader, and no panic"))

	served := make(chan struct{})
	handle := s.afterRaft(func(net.Conn) { close(served) })
	a, b := net.Pipe()
	defer b.Close()
	go handle(a)
	select {
	case <-served:
		t.Fatal("a connection was served before raft was set up")
	case <-time.After(50 * time.Millisecond):
	}
	close(s.raftReady)
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection was not served once raft was set up")
	}
}

// A connection still waiting for raft when the server shuts down is
// closed, not left hanging.
func TestServer_AfterRaft_ClosedOnShutdown(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := &Server{ctx: ctx, raftReady: make(chan struct{})}
	handle := s.afterRaft(func(net.Conn) { t.Error("served without raft") })
	a, b := net.Pipe()
	done := make(chan struct{})
	go func() { handle(a); close(done) }()
	cancel()
	<-done
	_, err := b.Read(make([]byte, 1))
	must.Error(t, err, must.Sprint("the waiting connection is closed"))
}
