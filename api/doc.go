// Package api is the Go client of berth's HTTP API: what the CLI and users'
// programs import to read and change a cluster.
//
// Responses decode into the structs package's types. Requests that carry
// secrets or mount flags use api-owned types (VolumeSpec, MountOptions)
// because structs.CSISecrets and structs.CSIMountOptions redact themselves
// in JSON, and the real values must reach the server.
//
// Every request carries Config.Token (X-Berth-Token), when set. An
// https:// address is verified with Config.TLS (the CA, a client
// certificate for agents with verify_https_client, a server name);
// DefaultConfig reads both from the BERTH_* environment, as the CLI does.
//
// Errors the server answers with are *Error values; errors.Is(err,
// structs.ErrNotFound) (and the other structs sentinels) matches them by
// code.
//
// Imports: the standard library and structs only. It must never import
// server, state, fsm, rpc or client.
//
// Concurrency: a Client is safe for concurrent use; WithContext returns a
// copy bound to a context and leaves the original unchanged.
package api
