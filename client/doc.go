// Package client is berth's node agent: it registers its node with a
// stable ID, heartbeats within the TTL the servers give, runs allocations
// and plugin tasks, and fingerprints CSI plugins into the node's split
// controller/node plugin maps.
//
// Its subpackages will be: csi (the ONLY importer of the CSI spec and
// gRPC), pluginmanager, dynamicplugins, volumemanager and allocrunner. It
// imports structs and rpc; it must never import server, state or fsm, so a
// client cannot reach around the servers' raft log.
//
// This build holds no client code yet: `berth agent -client` refuses to
// start and says so.
package client
