package agent

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestSecurityWarnings: the warnings an agent logs at start, by how it is
// configured and where it listens. Each wanted line is given by what it
// must say; an agent secured for where it listens gets none.
func TestSecurityWarnings(t *testing.T) {
	const (
		aclOff       = "ACLs are off and the agent listens on "
		httpPlain    = "is plain HTTP, beyond loopback: requests and answers (job specs, task logs) cross the network in clear"
		aclPlainHTTP = "ACLs are on but the HTTP API "
		rpcPlain     = "RPC is plain text on "
		clientRPC    = "RPC to the servers is plain text: this node's secret"
		gossip       = "gossip is not encrypted: server { encrypt } is not set"
	)
	type setup func(*Config)
	var (
		server   setup = func(c *Config) { c.Server.Enabled = true }
		client   setup = func(c *Config) { c.Client.Enabled = true }
		acl      setup = func(c *Config) { c.ACL.Enabled = true }
		tlsRPC   setup = func(c *Config) { c.TLS.RPC, c.TLS.VerifyServerHostname = true, true }
		tlsHTTP  setup = func(c *Config) { c.TLS.HTTP = true }
		key      setup = func(c *Config) { c.encryptKey = make([]byte, 32) }
		dev      setup = func(c *Config) { c.Dev, c.Server.Enabled, c.Client.Enabled = true, true, true }
		bind           = func(addr string) setup { return func(c *Config) { c.BindAddr = addr } }
		servers        = func(s ...string) setup { return func(c *Config) { c.Client.Servers = s } }
		noBlocks setup = func(c *Config) { c.TLS, c.ACL = nil, nil }
	)
	cases := []struct {
		name  string
		setup []setup
		want  [][]string // each warning, by the parts it must hold
	}{
		{"dev", []setup{dev}, [][]string{{"dev mode: TLS and ACLs are off; do not expose this agent to a network"}}},
		{"dev beyond loopback", []setup{dev, bind("0.0.0.0")}, [][]string{
			{"dev mode: TLS and ACLs are off"},
			{"dev mode listens on 0.0.0.0, beyond loopback: anyone who reaches it may run any job, as root", "leave -bind at 127.0.0.1"}}},
		{"server on loopback, no gossip key", []setup{server}, [][]string{
			{gossip, "serf port 127.0.0.1:4748", "`berth operator gossip keygen`, the same on every server"}}},
		{"server on loopback with a gossip key", []setup{server, key}, nil},
		{"server beyond loopback, nothing set", []setup{server, bind("10.0.0.1")}, [][]string{
			{aclOff + "10.0.0.1, beyond loopback: anyone who reaches its HTTP API 10.0.0.1:4746 and its RPC port 10.0.0.1:4747 may do everything",
				"set acl { enabled = true } on every agent and run `berth acl bootstrap`"},
			{"the HTTP API 10.0.0.1:4746 " + httpPlain, "set tls { http = true }"},
			{rpcPlain + "10.0.0.1:4747, beyond loopback", "set tls { rpc = true } with verify_server_hostname = true"},
			{gossip, "serf port 10.0.0.1:4748"}}},
		{"server beyond loopback, no tls or acl blocks", []setup{server, bind("10.0.0.1"), key, noBlocks}, [][]string{
			{aclOff}, {httpPlain}, {rpcPlain}}},
		{"server beyond loopback with TLS, no ACLs", []setup{server, bind("10.0.0.1"), tlsRPC, tlsHTTP, key}, [][]string{
			{aclOff + "10.0.0.1, beyond loopback: anyone who reaches its HTTP API 10.0.0.1:4746 may do everything"}}},
		{"server beyond loopback, everything on", []setup{server, bind("10.0.0.1"), acl, tlsRPC, tlsHTTP, key}, nil},
		{"server beyond loopback, ACLs over plain HTTP", []setup{server, bind("10.0.0.1"), acl, tlsRPC, key}, [][]string{
			{aclPlainHTTP + "10.0.0.1:4746 is plain HTTP: tokens cross plain HTTP, to and from the network, and tasks on this host share its loopback and can read them",
				"set tls { http = true }"}}},
		{"server on loopback, ACLs over plain HTTP", []setup{server, acl, tlsRPC, key}, [][]string{
			{aclPlainHTTP + "127.0.0.1:4746 is plain HTTP: tokens cross plain HTTP and tasks on this host share its loopback and can read them"}}},
		{"client beyond loopback, nothing set", []setup{client, bind("10.0.0.5"), servers("10.0.0.1:4747")}, [][]string{
			{aclOff + "10.0.0.5, beyond loopback: its HTTP API 10.0.0.5:4746 passes every request to the servers", "set acl { enabled = true } on every agent"},
			{"the HTTP API 10.0.0.5:4746 " + httpPlain},
			{clientRPC, "set tls { rpc = true }"}}},
		{"client on loopback, servers on other hosts", []setup{client, servers("127.0.0.1:4747", "s2.example:4747")}, [][]string{{clientRPC}}},
		{"client on loopback, servers on loopback", []setup{client, servers("127.0.0.1:4747", "localhost:5747")}, nil},
		{"client with ACLs over plain HTTP", []setup{client, acl, tlsRPC, servers("10.0.0.1:4747")}, [][]string{{aclPlainHTTP}}},
		{"client beyond loopback, everything on", []setup{client, bind("10.0.0.5"), acl, tlsRPC, tlsHTTP, servers("10.0.0.1:4747")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultConfig()
			for _, s := range tc.setup {
				s(cfg)
			}
			got := securityWarnings(cfg)
			must.SliceLen(t, len(tc.want), got, must.Sprintf("warnings: %q", got))
			for i, parts := range tc.want {
				for _, p := range parts {
					must.StrContains(t, got[i], p)
				}
			}
		})
	}
}
