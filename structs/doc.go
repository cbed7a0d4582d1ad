// Package structs holds berth's domain and wire types: nodes, CSI plugins,
// volumes and claims, jobs and allocations, the RPC request and response
// envelopes, the raft MessageType numbers, the coded Error that crosses RPC
// and HTTP, and the msgpack handle every encoder shares. It also holds the
// one rule for IDs and names (ValidateName) and the checks a request must
// pass before a server reads it (Job.Validate, CSIVolume.Validate): a null
// entry, a bad name or an unbounded setting is a BadRequest naming it.
//
// It is the leaf of the import graph: it imports the standard library and
// the msgpack codec only, never another berth package.
//
// Concurrency: values read from the state store are shared and immutable.
// Every mutable type has a Copy method; a writer copies, changes the copy and
// hands the copy to the state store. Nothing in this package locks.
package structs
