package server

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// TestApplyError_Codes: raft errors that answer an entry that never
// entered the log are Unavailable (retry as is); those that leave it
// possibly committed are Indeterminate (read first).
func TestApplyError_Codes(t *testing.T) {
	cases := []struct {
		err        error
		code       structs.ErrorCode
		notApplied bool
	}{
		{raft.ErrNotLeader, structs.CodeUnavailable, true},
		{raft.ErrLeadershipTransferInProgress, structs.CodeUnavailable, true},
		{raft.ErrEnqueueTimeout, structs.CodeUnavailable, true},
		{raft.ErrAbortedByRestore, structs.CodeUnavailable, true},
		{raft.ErrLeadershipLost, structs.CodeIndeterminate, false},
		{raft.ErrRaftShutdown, structs.CodeIndeterminate, false},
		{fmt.Errorf("disk: %w", errors.New("no space")), structs.CodeInternal, false},
	}
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			err := applyError(structs.CSIVolumeRegisterRequestType, tc.err)
			must.EqOp(t, tc.code, structs.ErrorCodeOf(err))
			must.EqOp(t, tc.notApplied, structs.NotApplied(err))
			must.StrContains(t, err.Error(), "CSIVolumeRegister")
			must.StrContains(t, err.Error(), tc.err.Error())
		})
	}
}

// TestRaftApply_NotLeader_NotApplied: a server that never bootstrapped is a
// follower with no leader; raft refuses the entry before it enters the
// log, so the write is Unavailable and safe to send again.
func TestRaftApply_NotLeader_NotApplied(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeName = "follower"
	cfg.DataDir = t.TempDir()
	cfg.RPCPort, cfg.SerfPort = 0, 0
	cfg.GossipLocal = true
	cfg.BootstrapExpect = 3 // the two others never come
	cfg.Logger = testlog.Logger(t, "follower")
	s, err := New(cfg)
	must.NoError(t, err)
	t.Cleanup(func() { _ = s.Shutdown() })

	_, _, err = raftApply[any](s, structs.CSIVolumeRegisterRequestType, &structs.CSIVolumeRegisterRequest{})
	must.ErrorIs(t, err, structs.ErrUnavailable)
	must.False(t, errors.Is(err, structs.ErrIndeterminate))
	must.True(t, structs.NotApplied(err))
	must.StrContains(t, err.Error(), "CSIVolumeRegister")
	must.StrContains(t, err.Error(), raft.ErrNotLeader.Error())
}
