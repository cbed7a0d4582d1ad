package rpc

import "sort"

// Methods lists every method the server serves, as "Service.Method",
// sorted: what a test walks to check each endpoint.
func (s *Server) Methods() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for name, svc := range s.services {
		for m := range svc.methods {
			out = append(out, name+"."+m)
		}
	}
	sort.Strings(out)
	return out
}
