// Package httpapi serves berth's HTTP API: JSON over HTTP in Nomad's shape
// (/v1/volumes, /v1/volume/csi/:id, /v1/volumes/snapshot, /v1/plugins,
// /v1/nodes, /v1/jobs, /v1/job/:id, /v1/allocations, /v1/client/fs/logs,
// /v1/acl/..., /v1/status/...). Each route parses its query and body into a
// structs request, calls one RPC on the agent's server in-process through
// Backend, and writes the reply as JSON with the raft index in the
// X-Berth-Index header; a task's log is the one answer written as plain
// bytes. The operator snapshot (GET and PUT /v1/operator/snapshot,
// operator_snapshot.go) is the other exception: a file streamed out, or
// read in (up to structs.SnapshotMaxFileSize, each chunk within
// bodyReadTimeout), in chunks, one RPC each, to the leader that stages it.
// The event stream (GET /v1/event/stream, events.go) is the third: NDJSON
// lines written as a long poll of Event.Next brings them, with heartbeat
// lines while idle, until the caller or the agent goes away.
//
// The caller's ACL token comes in the X-Berth-Token header. ServeHTTP puts
// it in the request's context and the Backend is wrapped (authBackend) so
// that every RPC's AuthToken is set from it: no route handles the token
// itself, and none can forget it. The servers decide what it may do; this
// package only maps their PermissionDenied to a 403.
//
// It owns routing, query parsing (blocking queries: ?index=&wait=, ?stale,
// ?prefix=, ?namespace=), the mapping of structs error codes to HTTP status,
// and the JSON error body {"Code", "Message"}. Request bodies are read by
// decodeBody alone: at most 8 MiB, unknown fields refused (400 naming the
// field), arriving within bodyReadTimeout (408). It decides nothing about the
// objects themselves: validation and sanitizing (no secrets in answers)
// belong to the server's endpoints. It must not add secrets back.
//
// Every request is counted and timed by route pattern, method and status,
// its time also by whether it was a long poll (?index=, the event stream)
// (instrument.go, internal/telemetry).
//
// Imports: structs, internal/telemetry and hclog only; never server, state
// or fsm (the server is reached through the Backend interface).
//
// Concurrency: the handler is stateless and safe for concurrent use; each
// request's context flows into its RPC, so a client that goes away cancels
// its blocking query.
package httpapi
