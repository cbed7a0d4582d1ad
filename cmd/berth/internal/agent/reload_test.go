package agent

import (
	"os"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/tlsutil"
	"github.com/berth-csi/berth/tlsutil/tlsutiltest"
)

// TestReloaders_AllOrNone: SIGHUP puts new certificates in use in every
// part or in none, and logs the one outcome: a part whose files are bad
// keeps the others from switching too.
func TestReloaders_AllOrNone(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	part := func(name string) (*tlsutil.Configurator, tlsutil.Config) {
		c := pki.Configurator(t, name, tlsutil.RoleServer)
		return c, c.Config()
	}
	server, serverCfg := part("server")
	https, httpsCfg := part("https")
	var reload reloaders
	reload.add("server", server.PrepareReload)
	reload.add("https", https.PrepareReload)
	serials := func() [2]string {
		return [2]string{server.Certificate().SerialNumber.String(), https.Certificate().SerialNumber.String()}
	}
	before := serials()

	// The server's files are good and new, the listener's key is not.
	pki.Rewrite(t, &serverCfg, tlsutil.RoleServer)
	pki.Rewrite(t, &httpsCfg, tlsutil.RoleServer)
	must.NoError(t, os.WriteFile(httpsCfg.KeyFile, []byte("garbage"), 0o600))
	logs := &testlog.Recorder{}
	reload.run(logs.Logger("agent"))
	must.Eq(t, before, serials(), must.Sprint("no part switched"))
	must.StrContains(t, logs.String(), "sighup: tls reload failed; keeping the certificates in use")
	must.StrContains(t, logs.String(), "https: tls: load cert_file")
	must.StrNotContains(t, logs.String(), "tls certificates reloaded")

	pki.Rewrite(t, &httpsCfg, tlsutil.RoleServer)
	logs = &testlog.Recorder{}
	reload.run(logs.Logger("agent"))
	after := serials()
	must.NotEq(t, before[0], after[0])
	must.NotEq(t, before[1], after[1])
	must.EqOp(t, 1, strings.Count(logs.String(), "sighup:"), must.Sprint(logs.String()))
	must.StrContains(t, logs.String(), `sighup: tls certificates reloaded: parts="server,https"`)
}
