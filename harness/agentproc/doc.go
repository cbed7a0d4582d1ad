// Package agentproc starts, signals and stops berth agent processes for the
// harnesses that run berth as real processes (harness/chaos,
// harness/loadtest, harness/fleet): a Proc is one agent that can be killed
// and started again with the same arguments, signalled by its PID alone,
// with its own log file; StartServers and StartClient start a cluster's
// agents and end them at the test's cleanup, on ports from
// testlog.FreePorts; WaitUntil polls a condition for a test.
//
// Beyond the standard library it imports only the client's test helpers,
// the exec driver (to kill a client's tasks and detach its mounts at
// cleanup) and internal/testlog. Only other harnesses under harness/ may import it; no berth
// package nor internal/ library does (see internal/tools/importcheck).
//
// Concurrency: a Proc is safe for concurrent use once started.
package agentproc
