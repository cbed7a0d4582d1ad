package server

// HandOffLeadership exposes handOffLeadership to the external tests.
func (s *Server) HandOffLeadership() { s.handOffLeadership() }
