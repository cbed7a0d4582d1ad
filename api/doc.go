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
// Retries: a request that fails on a passing fault is sent again, with
// exponential backoff (100 ms doubling to 2 s, jittered) for up to 15 s
// from its first send (Config.Retry changes the budget or turns retries
// off; Config.OnRetry sees each retried failure). Any request, a write
// included, is retried when it was not applied: an answer coded
// Unavailable or NotReady, or a connection that never opened (a dial that
// timed out). A connection refused is not
// retried (no agent listens there; the caller hears so at once). A GET
// is also retried after an Indeterminate answer, an uncoded
// 502, 503 or 504, or a connection that broke or timed out, but not after
// a TLS or name failure that a retry cannot mend. A write whose answer was
// lost (Indeterminate, or a connection that broke after it was sent) is
// never retried: it may have been applied, and the caller must read
// before sending it again; its error matches structs.ErrIndeterminate. A
// backoff ends when the client's context does. When the budget runs out
// the last error comes back, saying how many attempts were made.
//
// Imports: the standard library and structs only. It must never import
// server, state, fsm, rpc or client.
//
// Concurrency: a Client is safe for concurrent use; WithContext returns a
// copy bound to a context and leaves the original unchanged. OnRetry is
// called on the goroutine of the request being retried, so it must be
// safe for concurrent use when the client is.
package api
