package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/chromedp/chromedp"
	"github.com/shoenig/test/must"
)

// aclServerHCL is a server's config with ACLs on (which needs mutual TLS
// between servers) and plain HTTP, in the dir of `berth tls` files.
func aclServerHCL(dir string) string {
	return fmt.Sprintf(`
acl {
  enabled = true
}
tls {
  rpc                    = true
  verify_server_hostname = true
  ca_file                = %q
  cert_file              = %q
  key_file               = %q
}
`, filepath.Join(dir, "berth-agent-ca.pem"), filepath.Join(dir, "global-server-berth-0.pem"),
		filepath.Join(dir, "global-server-berth-0-key.pem"))
}

// TestProcess_WebUI_TokenBox opens the web UI of a server that enforces
// ACLs: the 403 shows the token box with the server's message; the
// bootstrap token given there is kept in localStorage and sent, and the
// page renders, also after a reload.
func TestProcess_WebUI_TokenBox(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, starts a server and a browser")
	}
	ctx, exceptions := browser(t)
	bin := buildBerth(t)
	pki := t.TempDir()
	cliIn(t, bin, pki, "tls", "ca", "create")
	cliIn(t, bin, pki, "tls", "cert", "create", "-server")
	ports := testlog.FreePorts(t, "127.0.0.1", 3)
	a := &agentProc{name: "s0", dataDir: t.TempDir(), httpPort: ports[0], rpcPort: ports[1], serfPort: ports[2]}
	startAgent(t, bin, a, "", "-config", writeSpec(t, "server.hcl", aclServerHCL(pki)), "-bootstrap-expect", "1")
	waitUntil(t, 60*time.Second, "a leader", func() bool { return leaderOf(a) != "" })
	out, errOut, code := berthCLI(t, bin, a, "acl", "bootstrap")
	must.Zero(t, code, must.Sprint(out, errOut))
	secret := secretOf(t, out)

	// What the server says to a request without a token.
	var refusal struct{ Code, Message string }
	resp, err := http.Get(a.httpAddr() + "/v1/nodes")
	must.NoError(t, err)
	defer resp.Body.Close()
	must.EqOp(t, http.StatusForbidden, resp.StatusCode)
	must.NoError(t, json.NewDecoder(resp.Body).Decode(&refusal))
	must.EqOp(t, "PermissionDenied", refusal.Code)

	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	must.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(a.httpAddr()+"/ui/#/nodes"),
		chromedp.WaitVisible(chromedp.CSS(`#token-panel #token-input`)),
		chromedp.WaitVisible(chromedp.CSS(`main .panel.error`)),
	))
	shown, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#token-message`)))
	must.NoError(t, err)
	must.EqOp(t, refusal.Message, shown)

	must.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#token-input`), secret),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#token-panel`)),
		chromedp.WaitVisible(chromedp.CSS(`main section.card`)),
	))
	h1, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`main h1`)))
	must.NoError(t, err)
	must.EqOp(t, "Nodes", h1)
	stored, err := chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem("berth.token")`))
	must.NoError(t, err)
	must.EqOp(t, secret, stored)

	// A new page load reads the token from localStorage.
	must.NoError(t, chromedp.Do(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`main section.card`)),
	))
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("token-panel").hidden`))
	must.NoError(t, err)
	must.True(t, hidden)
	must.SliceEmpty(t, exceptions(), must.Sprint("JavaScript exceptions on the page"))
}
