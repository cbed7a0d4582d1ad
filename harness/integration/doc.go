// Package integration holds tests that run the whole system in one test
// binary: a real three-server cluster (servertest), real client agents
// (clienttest) and real CSI plugin processes (the csi-test mock driver and
// berth-hostpath). It has no non-test code beyond this comment.
//
// It is in the harness layer (harness/), not among the leaf libraries of
// internal/, because its tests import the whole system (server, client
// and their test packages); no package outside harness/ may import it
// (see internal/tools/importcheck).
package integration
