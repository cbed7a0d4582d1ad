// Package csitest is the test harness for berth's CSI client code: it finds
// (or builds) the csi-test v4.2.0 mock CSI driver and runs it as a real
// process on a unix socket in a test's temp dir, with the faults the real
// process can show: SIGKILL (crash), SIGSTOP (hang), restart on the same
// socket, and gRPC error codes injected through its -hooks-file. It also
// serves sockets that are not CSI plugins.
//
// It is imported only by tests. Like the rest of client/**, it imports only
// the standard library, structs, rpc and other client packages; it must not
// import gRPC or the CSI spec (client/csi is their only importer), so it
// talks to the driver only through signals, files and the socket's
// existence.
//
// Concurrency: a *Plugin may be used from several goroutines. Each driver
// process has one goroutine, owned by its Plugin, that waits for the
// process to exit; Stop, Kill and the test's cleanup end the process and
// wait for that goroutine. Only processes this package started are
// signalled, by the PID recorded when they were started.
package csitest
