// Package integration holds tests that run the whole system in one test
// binary: a real three-server cluster (servertest), real client agents
// (clienttest) and real CSI plugin processes (the csi-test mock driver and
// berth-hostpath). It has no non-test code beyond this comment.
package integration
