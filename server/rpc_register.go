package server

import "fmt"

// registerEndpoints registers every RPC endpoint under its name.
func (s *Server) registerEndpoints() error {
	endpoints := map[string]any{
		"Status":       &Status{srv: s},
		"Operator":     &Operator{srv: s},
		"Node":         &Node{srv: s},
		"CSIVolume":    &CSIVolume{srv: s},
		"CSIPlugin":    &CSIPlugin{srv: s},
		"ClientStatus": &ClientStatus{srv: s},
		"ClientCSI":    &ClientCSI{srv: s},
		"Job":          &Job{srv: s},
		"Alloc":        &Alloc{srv: s},
		"Keyring":      &Keyring{srv: s},
		"ACL":          &ACL{srv: s},
		"System":       &System{srv: s},
		"Event":        &Event{srv: s},

		"ClientAllocations": &ClientAllocations{srv: s},
	}
	for name, e := range endpoints {
		if err := s.rpcServer.Register(name, e); err != nil {
			return fmt.Errorf("server: register %s endpoint: %w", name, err)
		}
	}
	return checkMethodTable(s.rpcServer.Methods())
}
