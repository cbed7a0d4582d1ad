package client

import "fmt"

// PrepareReloadTLS reads and checks the CA, certificate and key files
// again without using them (SIGHUP): commit makes the next session to a
// server use them; open sessions keep theirs. The agent prepares every part
// it reloads before it commits any, so that a SIGHUP reloads all or none.
// On an error nothing changes. Without tls.rpc commit does nothing.
func (c *Client) PrepareReloadTLS() (commit func(), err error) {
	if c.tls == nil {
		return func() {}, nil
	}
	commit, err = c.tls.PrepareReload()
	if err != nil {
		return nil, fmt.Errorf("client: reload TLS certificates: %w", err)
	}
	return commit, nil
}
