package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"slices"
)

// RoleOf is the role cert speaks for: the first of server.global.berth,
// client.global.berth and cli.global.berth among its DNS names, else
// RoleNone. It does not verify cert.
func RoleOf(cert *x509.Certificate) Role {
	if cert == nil {
		return RoleNone
	}
	switch {
	case slices.Contains(cert.DNSNames, ServerName):
		return RoleServer
	case slices.Contains(cert.DNSNames, ClientName):
		return RoleClient
	case slices.Contains(cert.DNSNames, CLIName):
		return RoleCLI
	}
	return RoleNone
}

// PeerRole is the role of the certificate the peer of a connection
// presented, if the handshake verified it against the CA (a server's view
// of a client under RequireAndVerifyClientCert, a client's view of a server
// with VerifyServerHostname); RoleNone otherwise.
func PeerRole(cs tls.ConnectionState) Role {
	if !cs.HandshakeComplete || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return RoleNone
	}
	return RoleOf(cs.VerifiedChains[0][0])
}
