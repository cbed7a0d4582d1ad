package server

// HandOffLeadership exposes handOffLeadership to the external tests.
func (s *Server) HandOffLeadership() { s.handOffLeadership() }

// FollowerReads is how many reads s served as a follower by read index.
func (s *Server) FollowerReads() uint64 { return s.followerReads.Load() }

// stagedCount is how many operator snapshot files are staged.
func (s *Server) stagedCount() int {
	st := &s.snapshots
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.files)
}

// AppliedIndex is the last raft index s's FSM applied.
func (s *Server) AppliedIndex() uint64 { return s.fsm.AppliedIndex() }
