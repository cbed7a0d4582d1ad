package agent

import (
	"fmt"
	"net"
	"strconv"
)

// securityWarnings are what the agent logs at start (WARN) about how cfg
// leaves it open, by the threat model of docs/security.md: each says
// what is exposed and what to set. An agent secured for where it listens
// gets none. -dev turns TLS, ACLs and the gossip key off on purpose, so it
// gets its own warnings instead of one for each.
func securityWarnings(cfg *Config) []string {
	if cfg.Dev {
		w := []string{"dev mode: TLS and ACLs are off; do not expose this agent to a network"}
		if !isLoopback(cfg.BindAddr) {
			w = append(w, fmt.Sprintf("dev mode listens on %s, beyond loopback: anyone who reaches it may run any job, as root; "+
				"leave -bind at 127.0.0.1 for -dev, and run a configured agent (tls, acl, server.encrypt) on a network", cfg.BindAddr))
		}
		return w
	}
	var (
		aclOn     = cfg.ACL != nil && cfg.ACL.Enabled
		tlsHTTP   = cfg.TLS != nil && cfg.TLS.HTTP
		tlsRPC    = cfg.TLS != nil && cfg.TLS.RPC
		networked = !isLoopback(cfg.BindAddr)
		server    = cfg.Server != nil && cfg.Server.Enabled
		client    = cfg.Client != nil && cfg.Client.Enabled
		httpAddr  = net.JoinHostPort(cfg.BindAddr, strconv.Itoa(cfg.Ports.HTTP))
		rpcAddr   = net.JoinHostPort(cfg.BindAddr, strconv.Itoa(cfg.Ports.RPC))
		serfAddr  = net.JoinHostPort(cfg.BindAddr, strconv.Itoa(cfg.Ports.Serf))
	)
	var w []string
	switch {
	case aclOn || !networked:
	case server:
		rpc := ""
		if !tlsRPC {
			rpc = " and its RPC port " + rpcAddr
		}
		w = append(w, fmt.Sprintf("ACLs are off and the agent listens on %s, beyond loopback: anyone who reaches its HTTP API %s%s "+
			"may do everything: run jobs, read task logs, register volumes and plugins, drain nodes, save and restore snapshots; "+
			"set acl { enabled = true } on every agent and run `berth acl bootstrap`", cfg.BindAddr, httpAddr, rpc))
	default:
		w = append(w, fmt.Sprintf("ACLs are off and the agent listens on %s, beyond loopback: its HTTP API %s passes every request "+
			"to the servers, and unless they enforce ACLs anyone who reaches it may run jobs and read task logs; "+
			"set acl { enabled = true } on every agent", cfg.BindAddr, httpAddr))
	}
	switch {
	case tlsHTTP:
	case aclOn:
		where := ""
		if networked {
			where = ", to and from the network,"
		}
		w = append(w, fmt.Sprintf("ACLs are on but the HTTP API %s is plain HTTP: tokens cross plain HTTP%s and tasks on this host "+
			"share its loopback and can read them (exec tasks and host-network containers that may capture packets); "+
			"set tls { http = true }", httpAddr, where))
	case networked:
		w = append(w, fmt.Sprintf("the HTTP API %s is plain HTTP, beyond loopback: requests and answers (job specs, task logs) "+
			"cross the network in clear, and anyone on the path can read or change them; set tls { http = true }, "+
			"with verify_https_client = true to ask callers for a certificate of the CA", httpAddr))
	}
	switch {
	case tlsRPC:
	case server && networked:
		w = append(w, fmt.Sprintf("RPC is plain text on %s, beyond loopback: raft, forwarded requests and client sessions "+
			"(node secrets, volume secrets on their way to clients) cross the network unencrypted, and any host may dial in "+
			"as a server or a client; set tls { rpc = true } with verify_server_hostname = true (certificates from `berth tls`)", rpcAddr))
	case client && !server && (networked || remoteServers(cfg.Client.Servers)):
		w = append(w, "RPC to the servers is plain text: this node's secret and the volume secrets of its claims cross the "+
			"network unencrypted, and a host that takes a server's address gets them; set tls { rpc = true } with "+
			"verify_server_hostname = true (certificates from `berth tls`)")
	}
	if server && len(cfg.encryptKey) == 0 {
		w = append(w, fmt.Sprintf("gossip is not encrypted: server { encrypt } is not set, so anyone who reaches the serf port %s "+
			"can read the servers' member list and inject members into it; set server { encrypt } to a key from "+
			"`berth operator gossip keygen`, the same on every server", serfAddr))
	}
	return w
}

// remoteServers reports whether any of the servers (host:port) may be on
// another host: not a loopback IP, nor localhost.
func remoteServers(servers []string) bool {
	for _, s := range servers {
		host, _, err := net.SplitHostPort(s)
		if err != nil {
			host = s
		}
		if host != "localhost" && !isLoopback(host) {
			return true
		}
	}
	return false
}
