package agentproc

import (
	"net/http"
	"testing"
	"time"

	"github.com/berth-csi/berth/api"
)

// API is a client of agent a's HTTP API over transport; it retries what
// the servers did not apply (503), calling onRetry, when set, for each
// retry.
func API(t testing.TB, a *Agent, transport http.RoundTripper, onRetry func(int, error)) *api.Client {
	t.Helper()
	cl, err := api.NewClient(api.Config{Address: a.HTTPAddr(), HTTPClient: &http.Client{Transport: transport}, OnRetry: onRetry})
	if err != nil {
		t.Fatalf("api client for %s: %v", a.Name, err)
	}
	return cl
}

// Probe is a client of agent a's HTTP API for polling: no retries and a
// short timeout, so that a poll says what the agent says now.
func Probe(t testing.TB, a *Agent, transport http.RoundTripper) *api.Client {
	t.Helper()
	cl, err := api.NewClient(api.Config{Address: a.HTTPAddr(), HTTPClient: &http.Client{Transport: transport},
		Timeouts: api.Timeouts{Read: 2 * time.Second, Write: 2 * time.Second}, Retry: api.Retry{Disabled: true}})
	if err != nil {
		t.Fatalf("api client for %s: %v", a.Name, err)
	}
	return cl
}

// AgreedLeader is the leader's RPC address that every server in among
// names (GET /v1/status/leader, polled without retries), "" when one names
// none or they differ.
func AgreedLeader(t testing.TB, among []*Agent, transport http.RoundTripper) string {
	first := ""
	for _, s := range among {
		l, err := Probe(t, s, transport).Status().Leader()
		if err != nil || l == "" || first != "" && l != first {
			return ""
		}
		first = l
	}
	return first
}

// Follower is a server of servers other than leader, nil if none.
func Follower(servers []*Agent, leader *Agent) *Agent {
	for _, s := range servers {
		if s != leader {
			return s
		}
	}
	return nil
}
