// Package client is berth's node agent. It registers its node under a
// stable ID kept in the data dir, heartbeats within the TTL the servers
// give (failing over between servers), keeps one multiplexed session per
// server on which the servers call it back (ClientStatus.Ping, and
// ClientCSI for controller calls: create, delete, validate, expand and
// list volumes, and create, delete and list snapshots; node detach and
// node expand of a volume in use here, through the volume manager), and turns plugin fingerprint changes into node
// updates that carry only what changed (nodeUpdater).
//
// Subpackages: csi (the ONLY importer of the CSI spec and gRPC),
// dynamicplugins (the registry fed by the client config and by plugin
// tasks), pluginmanager (per-plugin fingerprinting and probing) and
// csitest (real mock-driver processes for tests).
//
// It imports structs, rpc and its own subpackages; it must never import
// server, state or fsm, so a client cannot reach around the servers.
//
// Concurrency: Run owns every goroutine (the plugin manager, the node
// updater and the heartbeat loop) and waits for them when its context
// ends. The node updater's maps are guarded by its mutex; the plugin
// manager calls it from its own goroutines.
package client
