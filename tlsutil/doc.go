// Package tlsutil owns berth's mutual TLS: the agent's tls { } settings
// (Config), the certificates and CA loaded from files and reloaded on
// SIGHUP (Configurator), the *tls.Config for each side of an RPC or HTTPS
// connection, the roles a certificate carries, and the generation of a CA
// and certificates for `berth tls`.
//
// Roles: a certificate speaks for a server when its DNS names include
// server.global.berth, for a client agent with client.global.berth, for the
// CLI with cli.global.berth. Wherever a server is required (raft,
// forwarding, server-only endpoints, root keys) the servers accept only a
// verified server certificate, whatever the settings; verify_server_hostname
// makes a dialing server check it too: an outgoing RPC connection then
// accepts only a server certificate (OutgoingRPC). A client agent, which
// dials only servers, always checks it (OutgoingServerRPC).
//
// Imports: the standard library only (crypto/tls, crypto/x509,
// crypto/ecdsa); no hand-written crypto. Every berth package that speaks TLS
// builds on it.
//
// Concurrency: a Configurator is safe for concurrent use. Each *tls.Config
// it hands out is built from the certificates loaded at that moment, and the
// ones for accepting connections build a fresh one per handshake, so a
// Reload takes effect on the next connection; connections already open keep
// the certificates they were made with.
package tlsutil
