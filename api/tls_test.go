package api

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestClient_Token_OnEveryRequest(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"GET /v1/nodes":        {index: "3", body: `[]`},
		"PUT /v1/volume/csi/x": {body: `{}`},
	})
	c = c.WithToken("s3cr3t")
	requests := []struct {
		name string
		do   func() error
	}{
		{"query", func() error { _, _, err := c.Nodes().List(nil); return err }},
		{"blocking query", func() error {
			_, _, err := c.Nodes().List(&QueryOptions{WaitIndex: 2, WaitTime: time.Second})
			return err
		}},
		{"write", func() error {
			_, err := c.Raw().Write(http.MethodPut, "/v1/volume/csi/x", nil, map[string]string{}, nil)
			return err
		}},
		{"raw query", func() error {
			var out []any
			_, err := c.Raw().Query("/v1/nodes", url.Values{}, &out, nil)
			return err
		}},
	}
	for _, r := range requests {
		t.Run(r.name, func(t *testing.T) {
			must.NoError(t, r.do())
			must.EqOp(t, "s3cr3t", cs.last(t).header.Get(HeaderToken))
		})
	}
	t.Run("no token, no header", func(t *testing.T) {
		_, _, err := c.WithToken("").Nodes().List(nil)
		must.NoError(t, err)
		must.SliceEmpty(t, cs.last(t).header.Values(HeaderToken))
	})
	t.Run("from the config", func(t *testing.T) {
		c2, err := NewClient(Config{Address: c.Address(), Token: "from-config"})
		must.NoError(t, err)
		_, _, err = c2.Nodes().List(nil)
		must.NoError(t, err)
		must.EqOp(t, "from-config", cs.last(t).header.Get(HeaderToken))
	})
}

func TestDefaultConfig_Environment(t *testing.T) {
	for env, v := range map[string]string{
		AddressEnv: "https://10.0.0.1:4746", TokenEnv: "tok", CACertEnv: "ca.pem",
		ClientCertEnv: "c.pem", ClientKeyEnv: "k.pem", TLSServerNameEnv: "server.global.berth",
	} {
		t.Setenv(env, v)
	}
	must.Eq(t, Config{Address: "https://10.0.0.1:4746", Token: "tok", TLS: TLSConfig{
		CACert: "ca.pem", ClientCert: "c.pem", ClientKey: "k.pem", TLSServerName: "server.global.berth"}}, DefaultConfig())
}

// tlsServer is an HTTPS server that requires a client certificate (any),
// and
// the files of its certificate: the CA to trust, and (the same
// certificate) a client certificate and key to present.
func tlsServer(t *testing.T) (srv *httptest.Server, caFile, keyFile string) {
	t.Helper()
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`"127.0.0.1:4747"`))
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	caFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "key.pem")
	cert := srv.TLS.Certificates[0]
	must.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600))
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	must.NoError(t, err)
	must.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	return srv, caFile, keyFile
}

func TestClient_TLS(t *testing.T) {
	srv, caFile, keyFile := tlsServer(t)
	cases := []struct {
		name       string
		tls        TLSConfig
		newErr     string // NewClient fails
		requestErr string // the request fails
	}{
		{name: "CA and client certificate", tls: TLSConfig{CACert: caFile, ClientCert: caFile, ClientKey: keyFile}},
		{name: "server name in the certificate", tls: TLSConfig{CACert: caFile, ClientCert: caFile, ClientKey: keyFile, TLSServerName: "example.com"}},
		{name: "server name not in the certificate", tls: TLSConfig{CACert: caFile, ClientCert: caFile, ClientKey: keyFile, TLSServerName: "server.global.berth"},
			requestErr: "server.global.berth"},
		{name: "no CA: the system's do not know it", tls: TLSConfig{ClientCert: caFile, ClientKey: keyFile}, requestErr: "unknown authority"},
		{name: "no client certificate", tls: TLSConfig{CACert: caFile}, requestErr: "certificate required"},
		{name: "certificate without key", tls: TLSConfig{CACert: caFile, ClientCert: caFile}, newErr: "has no key"},
		{name: "missing CA file", tls: TLSConfig{CACert: filepath.Join(t.TempDir(), "nope.pem")}, newErr: "nope.pem"},
		{name: "CA file not a certificate", tls: TLSConfig{CACert: keyFile}, newErr: "holds no PEM certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClient(Config{Address: srv.URL, TLS: tc.tls})
			if tc.newErr != "" {
				must.ErrorContains(t, err, tc.newErr)
				return
			}
			must.NoError(t, err)
			leader, err := c.Status().Leader()
			if tc.requestErr != "" {
				must.ErrorContains(t, err, tc.requestErr)
				return
			}
			must.NoError(t, err)
			must.EqOp(t, "127.0.0.1:4747", leader)
		})
	}
}
