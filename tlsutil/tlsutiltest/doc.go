// Package tlsutiltest makes a throwaway PKI for tests: a CA in a temp dir
// and the role certificates it signs, written as the files a tls { } block
// names. Every package whose tests speak mutual TLS (tlsutil, rpc, server,
// client, the agent) takes its certificates from here.
//
// It imports only tlsutil, so that any package's tests may use it without
// an import cycle, and it may be imported only by tests and test harnesses.
package tlsutiltest
