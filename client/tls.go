package client

import "fmt"

// ReloadTLS reads the CA, certificate and key files again (SIGHUP): the
// next session to a server uses them; open sessions keep theirs. On an
// error the client keeps the certificates it had. Without tls.rpc there
// is nothing to reload and it returns nil.
func (c *Client) ReloadTLS() error {
	commit, err := c.PrepareReloadTLS()
	if err != nil {
		return err
	}
	commit()
	if c.tls != nil {
		c.logger.Info("tls certificates reloaded", "cert_file", c.config.TLS.CertFile)
	}
	return nil
}

// PrepareReloadTLS reads and checks the CA, certificate and key files
// again without using them: commit makes the next session use them. The
// agent prepares every part it reloads before it commits any, so that a
// SIGHUP reloads all or none. On an error nothing changes. Without tls.rpc
// commit does nothing.
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
