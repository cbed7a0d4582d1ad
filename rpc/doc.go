// Package rpc owns berth's RPC transport: the first-byte connection types and
// the accept loop that demultiplexes them (Mux), a msgpack RPC server with
// net/rpc-shaped methods (Server), the framing and error envelope both sides
// share, one-off dials and calls (Dial, CallConn, CallSession), and the
// client-side pool of yamux sessions (Pool).
//
// TLS: with WithMuxTLS a Mux serves only TypeTLS connections: the TLS
// handshake (both sides verified against the CA, tlsutil.Configurator),
// then the connection's type inside TLS. Plain-text connections of every
// type and failed handshakes are refused and logged with the peer's
// address; WithRequiredRole refuses a type (raft) to certificates of the
// wrong role. Dial (WithDialTLS) and Pool (WithPoolTLS) dial the same way.
// Each takes a func returning the *tls.Config, called per connection, so a
// certificate reload applies to the next connection. A request's Peer (its
// address, and the role of its verified certificate) is in its context
// (PeerFromContext), as is the yamux session it came on
// (SessionFromContext).
//
// Errors cross the wire with their code: a method's error travels as
// (structs.ErrorCodeOf(err), err.Error()) and the caller rebuilds a
// *structs.Error, so errors.Is(err, structs.ErrNotFound) holds on both sides.
// Every error a call returns is a *structs.Error. A transport failure is
// coded by whether the request was sent: before it was (a dial failure, no
// session, a context that ended first) the call is CodeUnavailable, and
// any call may be retried on another server; after it was (the session
// broke, the context was cancelled or passed its deadline while waiting
// for the answer) it is CodeIndeterminate: the method may have run, so a
// write must be checked before it is sent again. A method cut short by
// its context on the server side is Indeterminate too. Indeterminate
// matches structs.ErrUnavailable in errors.Is; structs.NotApplied tells
// the two apart.
//
// Limits bound what a peer can make the process hold:
//   - MaxFrameSize (16 MiB) bounds one request or reply, prefix, header and
//     body together, on both sides. A frame that declares more is refused
//     from its length prefix and costs the connection. A reply's buffer
//     grows with the bytes that arrive, never up front to the declared
//     length.
//   - The frame budget (frame_budget.go) bounds the bytes a Server's
//     requests being read hold together, over all its connections and
//     streams: DefaultFrameBudget (256 MiB, or a quarter of GOMEMLIMIT
//     when lower; WithFrameBudget). A request reserves its declared length
//     once its length prefix is read, before the rest is, and gives it back
//     once its body is decoded or its read fails; its buffer is made at
//     that length once its first 64 KiB have arrived, so it holds no more
//     than it reserved. Requests over 64 KiB leave the last eighth of the
//     budget to smaller ones. A request that finds no room waits for it up
//     to the stall timeout; then its body is read and dropped and it is
//     answered Unavailable (its method never ran); if not even its header
//     finds room, the connection goes.
//   - A new connection must send its type byte (and, under TLS, complete
//     its handshake and send its inner type byte) within the first-byte
//     timeout (DefaultFirstByteTimeout, WithFirstByteTimeout).
//   - A connection may idle between requests, and a method may take as long
//     as its caller waits; but once a request's first byte arrives, the rest
//     must arrive within the frame timeout (DefaultFrameTimeout,
//     WithFrameTimeout) and never stop for the stall timeout
//     (DefaultFrameStallTimeout, 5 s; WithFrameStallTimeout), or the
//     connection (a stream, over yamux) is closed and its room in the
//     budget given back. An idle yamux session is watched by yamux's
//     keepalive.
//   - Mux caps the connections it holds, of every type (raft's too), in all
//     (DefaultMaxConns: half the process's file descriptor limit, so that
//     RPC exhaustion leaves descriptors for the HTTP API and the rest) and
//     per remote IP (DefaultMaxConnsPerIP, or half the total if lower);
//     WithMaxConns and WithMaxConnsPerIP change them. Past a cap a
//     connection is closed as soon as it is accepted.
//   - A tenth of the total (WithReservedConns) is reserved for raft
//     connections and, under TLS, certificates of a reserved role
//     (WithReservedRoles: servers by default; the server package adds
//     clients). When the general places are all taken, a new connection
//     takes a reserved place until its type and certificate are known, and
//     is closed then unless it may keep it; one address holds at most
//     DefaultReservedConnsPerIP (16, or half the reserve) of them. So a
//     flood of idle anonymous connections cannot lock raft peers out.
//     Without TLS the type byte is the peer's word: a flood that names
//     itself raft takes reserved places too, a few per address.
//
// Every refusal is logged with the peer's address: refusals of
// connections over a cap or a reserved place, and requests dropped for the
// budget or a timeout, at most ten lines a second each, the next line
// counting the rest. Mux counts the connections it accepted and refused,
// and Server the requests it refused for the budget and cut off for a
// timeout (read by tests; there is no metric of them yet).
// FuzzReadFrame fuzzes the frame decoder; its seeds are in
// testdata/fuzz/FuzzReadFrame and run with the other tests.
//
// Every method call a Server dispatches (over a connection or in process) is
// counted and timed by method and code (metrics.go: berth_rpc_requests_total,
// berth_rpc_request_duration_seconds), its time also by whether its args
// ask to wait for a change (a BlockingQuery method: a long poll).
//
// Imports: the standard library, external modules (yamux, the msgpack codec,
// hclog) and berth's structs, tlsutil, internal/backoff and
// internal/telemetry packages only. It must never import state, fsm,
// server or client: they build on it, not the other way round.
//
// Concurrency: Server, Pool and Mux are safe for concurrent use. Requests on
// one connection are served concurrently and their responses serialized.
// Every goroutine has an owner and a stop path:
//   - Mux.Serve owns its accept loop and the first-byte reads; it hands each
//     connection to a handler on its own goroutine and does not wait for it.
//     The handler owns the connection; closing it frees its place under the
//     Mux's caps (a reserved one too).
//   - Server owns ServeConn, ServeMultiplex and ServeSession calls and the
//     per-request goroutines they start; Server.Shutdown cancels them all and
//     waits for them. A method that takes a context.Context is cancelled when
//     its caller hangs up, its deadline passes, or the server shuts down.
//     A request waiting for room in the frame budget waits on its
//     connection's read loop, no goroutine of its own, until room is given
//     back, the stall timeout passes or the server shuts down; the budget is
//     shared by all of a Server's connections, under a mutex.
//   - Pool owns its sessions and the goroutine per session that serves the
//     streams the far side opens; Pool.Shutdown closes and waits for them.
package rpc
