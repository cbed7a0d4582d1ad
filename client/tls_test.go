package client

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
	"github.com/berth-csi/berth/tlsutil/tlsutiltest"
)

func TestNew_TLS(t *testing.T) {
	cases := []struct {
		name string
		tls  *tlsutil.Config
		want string
	}{
		{"rpc without files", &tlsutil.Config{EnableRPC: true}, "client: tls: ca_file is required when tls.rpc is on"},
		{"missing CA file", &tlsutil.Config{EnableRPC: true, CAFile: "/nope/ca.pem", CertFile: "/nope/c.pem", KeyFile: "/nope/k.pem"},
			"/nope/ca.pem"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.DataDir = t.TempDir()
			cfg.Servers = []string{"127.0.0.1:4747"}
			cfg.TLS = tc.tls
			_, err := New(cfg)
			must.ErrorContains(t, err, tc.want)
		})
	}
	t.Run("without tls there is nothing to reload", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.Servers = []string{"127.0.0.1:4747"}
		c, err := New(cfg)
		must.NoError(t, err)
		commit, err := c.PrepareReloadTLS()
		must.NoError(t, err)
		commit()
	})
}

// fakeServer accepts one RPC connection over TLS with the certificate of
// tlsCfg, and reports how its handshake ended.
func fakeServer(t *testing.T, tlsCfg tlsutil.Config) (addr string, handshake <-chan error) {
	t.Helper()
	conf, err := tlsutil.NewConfigurator(tlsCfg)
	must.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	done := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		first := make([]byte, 1)
		if _, err := io.ReadFull(conn, first); err != nil {
			done <- err
			return
		}
		if first[0] != rpc.TypeTLS {
			done <- io.ErrUnexpectedEOF
			return
		}
		done <- tls.Server(conn, conf.IncomingRPC()).Handshake()
	}()
	return ln.Addr().String(), done
}

// TestClient_TLS_DialsOnlyServers: with tls.rpc on and verify_server_hostname
// off, a client still refuses a peer that is not a server: a host with a
// client certificate of the CA that intercepts a server's address gets
// neither a session nor the node secret.
func TestClient_TLS_DialsOnlyServers(t *testing.T) {
	pki := tlsutiltest.NewPKI(t)
	cases := []struct {
		name   string
		role   tlsutil.Role
		refuse bool
	}{
		{"a server certificate", tlsutil.RoleServer, false},
		{"a client certificate", tlsutil.RoleClient, true},
		{"a CLI certificate", tlsutil.RoleCLI, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr, handshake := fakeServer(t, *pki.Cert(t, "peer-"+string(tc.role), tc.role))

			cfg := DefaultConfig()
			cfg.DataDir = t.TempDir()
			cfg.Servers = []string{addr}
			cfg.TLS = pki.Cert(t, "client-agent", tlsutil.RoleClient)
			cfg.TLS.VerifyServerHostname = false
			c, err := New(cfg)
			must.NoError(t, err)
			t.Cleanup(c.pool.Shutdown)

			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			callErr := c.pool.Call(ctx, addr, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{}, &structs.NodeUpdateResponse{})
			must.Error(t, callErr) // the fake server never answers
			hsErr := <-handshake
			if tc.refuse {
				must.Error(t, hsErr)
				must.ErrorContains(t, callErr, tlsutil.ServerName)
			} else {
				must.NoError(t, hsErr)
			}
		})
	}
}
