package client

import "fmt"

// ReloadTLS reads the CA, certificate and key files again (SIGHUP): the
// next session to a server uses them; open sessions keep theirs. On an
// error the client keeps the certificates it had. Without tls.rpc there
// is nothing to reload and it returns nil.
func (c *Client) ReloadTLS() error {
	if c.tls == nil {
		return nil
	}
	if err := c.tls.Reload(); err != nil {
		return fmt.Errorf("client: reload TLS certificates: %w", err)
	}
	c.logger.Info("tls certificates reloaded", "cert_file", c.config.TLS.CertFile)
	return nil
}
