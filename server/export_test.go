package server

// HandOffLeadership exposes handOffLeadership to the external tests.
func (s *Server) HandOffLeadership() { s.handOffLeadership() }

// FollowerReads is how many reads s served as a follower by read index.
func (s *Server) FollowerReads() uint64 { return s.followerReads.Load() }
