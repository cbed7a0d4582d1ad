package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"slices"
	"strings"
)

// RoleOf is the role cert speaks for: the first of server.global.berth,
// client.global.berth and cli.global.berth among its DNS names, else
// RoleNone. Names compare as a TLS hostname check compares them (in any
// case, with or without a final dot), so that a certificate the outgoing
// check accepts as server.global.berth is a server's here too. It does not
// verify cert.
func RoleOf(cert *x509.Certificate) Role {
	if cert == nil {
		return RoleNone
	}
	for _, role := range []Role{RoleServer, RoleClient, RoleCLI} {
		if slices.ContainsFunc(cert.DNSNames, func(n string) bool { return roleOfName(n) == role }) {
			return role
		}
	}
	return RoleNone
}

// roleOfName is the role whose name n is, or RoleNone.
func roleOfName(n string) Role {
	switch n = strings.TrimSuffix(n, "."); {
	case strings.EqualFold(n, ServerName):
		return RoleServer
	case strings.EqualFold(n, ClientName):
		return RoleClient
	case strings.EqualFold(n, CLIName):
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
