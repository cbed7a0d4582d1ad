package server

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
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

// A served method without a row, or a row without a method, stops the
// server's start, naming the method.
func TestCheckMethodTable(t *testing.T) {
	var served []string
	for m := range rpcMethods {
		served = append(served, m)
	}
	must.NoError(t, checkMethodTable(served))
	err := checkMethodTable(append(served, "Job.Sneak"))
	must.ErrorContains(t, err, "RPC method Job.Sneak has no row in rpcMethods")
	err = checkMethodTable(served[1:])
	must.ErrorContains(t, err, "which no endpoint serves")
}

// A claim taken while its plugin published through a controller is
// unpublished by one on release even when the plugin is gone since: the
// step fails (and is retried) instead of being skipped, which freed the
// claim with the volume still published to the node.
func TestControllerDetach_PluginGoneWaits(t *testing.T) {
	s := testServer(t)
	vol := &structs.CSIVolume{ID: "data", PluginID: "gone", ExternalID: "ext-1"}
	claim := &structs.CSIVolumeClaim{AllocID: "a1", NodeID: "node-1", ControllerPublish: true}
	err := s.controllerDetach(t.Context(), vol, claim)
	must.ErrorContains(t, err, `controller detach from node node-1: plugin "gone" is not running on any node`)

	claim.ControllerPublish = false
	must.NoError(t, s.controllerDetach(t.Context(), vol, claim), must.Sprint("a claim taken without a controller publish has none to undo"))
}
