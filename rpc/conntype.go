package rpc

import "fmt"

// Connection types: the first byte a dialer writes on a TCP connection to a
// server says what follows. This is a wire enum: the values are explicit,
// append only, never renumbered or reused.
const (
	// TypeRPC is one plain msgpack RPC connection (see codec.go).
	TypeRPC byte = 0x01
	// TypeRaft is the raft transport; the server package handles it.
	TypeRaft byte = 0x02
	// TypeMultiplex is a yamux session whose every stream, opened by either
	// side, is an RPC connection. Clients and servers dial this.
	TypeMultiplex byte = 0x03
	// TypeTLS is a TLS connection: a TLS handshake follows, then one of
	// the types above inside the TLS stream (WithMuxTLS, WithDialTLS).
	TypeTLS byte = 0x04
)

// connTypeName names a connection type for log lines.
func connTypeName(t byte) string {
	switch t {
	case TypeRPC:
		return "rpc"
	case TypeRaft:
		return "raft"
	case TypeMultiplex:
		return "multiplex"
	case TypeTLS:
		return "tls"
	}
	return fmt.Sprintf("unknown(%#02x)", t)
}
