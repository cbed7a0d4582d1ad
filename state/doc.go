// Package state is berth's replicated state: a go-memdb database of nodes,
// jobs, allocations, CSI plugins and CSI volumes with their claims, the
// root keys' metadata (never their material), ACL policies and tokens (a
// token's secret only as its hash), and the last raft index that changed
// each table.
//
// It owns the schema (tables, indexes and the custom indexers that make
// "claims of alloc A" and "claims on node N" lookups), every write rule of
// the CSI domain (the plugin rows a node's fingerprint keeps, volume
// registration, the claim workflow taken -> unpublishing -> node-detached ->
// controller-detached -> freed), and the joins done on read (a plugin's
// instances from the node rows, every volume read). A plugin row holds
// counts of its instances, expected and healthy (healthy: the instance says
// so and its node is ready), moved by every node write in the same
// transaction (plugin_instances.go), so no read walks the nodes.
//
// Change events (events.go): a write begun with writeTxn has memdb track
// its changes; its commit turns them into structs.Event values at the
// write's raft index (a claim's every change of state is an event of its
// own, payloads sanitized as the API shows them) and hands them to the
// store's EventSink, the FSM's broker. ACL, root key and index changes
// make none (a key rotation's rekeyed volumes do).
//
// It imports structs and go-memdb only (and the standard library); it must
// never import fsm, server, rpc or client. Only the FSM writes to a
// StateStore; servers read it.
//
// Determinism: writes never read a clock, draw a random number or do I/O.
// Times and IDs arrive in the request. Every write takes the raft index
// first and has one shape:
//
//	txn := s.writeTxn(index) // s.db.Txn(true) for ACL writes
//	defer txn.Abort()
//	... change rows, bump the index table ...
//	txn.Commit()
//
// A write that returns an error has written nothing. Errors returned to
// callers are *structs.Error, so callers test them with errors.Is(err,
// structs.ErrNotFound) and friends.
//
// Concurrency: go-memdb allows one writer and any number of readers. Objects
// read from the store are shared and immutable: callers must Copy before
// changing one, and writers here copy, change the copy and insert it. Reads
// take a memdb.WatchSet first (nil is allowed) and add the watch channel of
// everything they read, so a blocking query wakes when any input of its
// answer changes. Reads work the same on a StateStore and on a StateSnapshot.
package state
