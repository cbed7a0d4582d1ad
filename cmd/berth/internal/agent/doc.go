// Package agent is `berth agent`: it reads flags and the agent's HCL
// config, starts a server, a client or both (-dev: both, and the
// berth-hostpath plugin for the client), serves the HTTP API, and shuts
// everything down cleanly on SIGINT or SIGTERM.
//
// It sits in cmd and may import any berth package. It owns every goroutine
// it starts and stops them before Run returns.
package agent
