// Package keyreplicate copies root key material between the servers.
// Raft holds only the keys' metadata (structs.RootKeyMeta); each
// server's keystore (server/keyring) holds the material, and this package
// moves it:
//
//   - Spread puts a new key's material on the other servers of the raft
//     configuration (Config.Put, Keyring.PutKey), all at once, and returns
//     as soon as a majority of the voters, this server included, holds
//     it: the leader commits the key's metadata only then, so no one
//     server's loss loses a key that sealed anything. Short of a majority
//     it returns Unavailable.
//   - Run, on every server for its whole life, watches the keys' metadata
//     and fetches the material of each key this server lacks from the
//     others (Fetch, Config.Get, Keyring.GetKey), with backoff, until it
//     has every key (a server that was down, or joined later). A key that
//     every other server answers it lacks is lost (Lost).
//
// Imports: structs, state, internal/backoff and internal/clock; never
// package server, which supplies Config (its raft configuration, its RPC
// pool, its keystore) and decides which key is active.
//
// Concurrency: Run is one goroutine, which ends with its context; Kick,
// Lost, Fetch and Spread are safe from any goroutine. Spread's pushes run
// on a goroutine each and go on after it returns, until
// Config.PushTimeout. The retry waits come only from Config.Clock; the
// RPC timeouts are contexts.
package keyreplicate
