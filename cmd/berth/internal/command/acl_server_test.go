package command

import (
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/cmd/berth/internal/httpapi"
	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
)

// idLine finds the value of a "Key = value" line.
func idLine(t *testing.T, out, key string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + key + ` += (\S+)$`).FindStringSubmatch(out)
	must.Len(t, 2, m, must.Sprintf("no %q line in:\n%s", key, out))
	return m[1]
}

// TestACLCommands_RealServer runs the ACL workflow of the CLI against a
// real server with ACLs on, through the real HTTP API.
func TestACLCommands_RealServer(t *testing.T) {
	cluster := servertest.Cluster(t, 1, func(cfg *server.Config) { cfg.ACLEnabled = true })
	srv := httptest.NewServer(httpapi.New(cluster.Servers[0].Server, nil))
	t.Cleanup(srv.Close)
	cli := func(stdin string, args ...string) result { return runCLI(t, srv.URL, stdin, args...) }

	r := cli("", "acl", "bootstrap")
	mustExit(t, r, 0, "")
	mgmt := idLine(t, r.stdout, "Secret ID")
	bootAccessor := idLine(t, r.stdout, "Accessor ID")
	mustExit(t, cli("", "acl", "bootstrap"), 1, "ACL bootstrap already done")

	mustExit(t, cli("", "acl", "token", "list"), 1, "Error: Permission denied")
	mustExit(t, cli("node {\n  policy = \"read\"\n}\n", "acl", "policy", "apply", "-token", mgmt,
		"-description", "dashboards", "readonly", "-"), 0, "")

	r = cli("", "acl", "token", "create", "-token", mgmt, "-name", "dash", "-policy", "readonly")
	mustExit(t, r, 0, "")
	dashSecret := idLine(t, r.stdout, "Secret ID")
	dashAccessor := idLine(t, r.stdout, "Accessor ID")

	r = cli("", "acl", "token", "self", "-token", dashSecret)
	mustExit(t, r, 0, "")
	must.StrContains(t, r.stdout, "Accessor ID  = "+dashAccessor+"\n")
	must.StrNotContains(t, r.stdout, dashSecret)
	mustExit(t, cli("", "acl", "policy", "delete", "-token", dashSecret, "readonly"), 1, "Error: Permission denied")

	r = cli("", "acl", "token", "list", "-token", mgmt)
	mustExit(t, r, 0, "")
	must.StrContains(t, r.stdout, bootAccessor)
	must.StrContains(t, r.stdout, dashAccessor)
	must.StrNotContains(t, r.stdout, mgmt)

	r = cli("", "acl", "token", "update", "-token", mgmt, "-name", "dash-2", dashAccessor[:8])
	mustExit(t, r, 0, "")
	must.StrContains(t, r.stdout, "Name         = dash-2\n")

	mustExit(t, cli("", "acl", "token", "delete", "-token", mgmt, dashAccessor[:8]), 0, "")
	mustExit(t, cli("", "acl", "token", "self", "-token", dashSecret), 1, "Error: no token")

	r = cli("", "acl", "policy", "info", "-token", mgmt, "readonly")
	mustExit(t, r, 0, "")
	must.StrContains(t, r.stdout, "Description  = dashboards\n")
	mustExit(t, cli("", "acl", "policy", "delete", "-token", mgmt, "readonly"), 0, "")
	mustExit(t, cli("", "acl", "policy", "info", "-token", mgmt, "readonly"), 1, `policy "readonly" not found`)
}
