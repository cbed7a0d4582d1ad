// Package agent is `berth agent`: it reads flags and the agent's HCL
// config, starts a server, a client or both (-dev: both, and the
// berth-hostpath plugin for the client), serves the HTTP API (HTTPS with
// tls.http), and shuts everything down cleanly on SIGINT or SIGTERM. SIGHUP
// reloads the TLS certificates of the server, the client and the HTTPS
// listener without a restart. Relative file names in the config (tls
// { ca_file ... }) are read from the config file's directory. -dev runs
// without TLS, ACLs or a gossip key, and says so when it starts.
//
// It sits in cmd and may import any berth package. It owns every goroutine
// it starts and stops them before Run returns.
package agent
