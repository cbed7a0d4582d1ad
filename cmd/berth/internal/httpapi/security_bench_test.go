package httpapi

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
	"github.com/berth-csi/berth/tlsutil/tlsutiltest"
)

// BenchmarkSecurity measures what mTLS, gossip encryption and ACLs cost,
// side by side in one run: a volume read and a volume registration over
// the HTTP API of a three-server cluster's leader, once plain and once
// with every security feature on (HTTPS with a client certificate, raft
// and RPC over mutual TLS, a client token whose policy the servers
// resolve on every call). It asserts nothing about speed.
func BenchmarkSecurity(b *testing.B) {
	for _, secure := range []bool{false, true} {
		mode := "plain"
		if secure {
			mode = "tls+acl"
		}
		w := newSecurityBenchWorld(b, secure)
		var seq atomic.Int64
		register := func() error {
			id := fmt.Sprintf("vol-%d", seq.Add(1))
			_, _, err := w.api.CSIVolumes().Register(&api.VolumeSpec{ID: id, PluginID: "hostpath",
				ExternalID: id, Secrets: map[string]string{"token": "s3cret"},
				RequestedCapabilities: []*structs.CSIVolumeCapability{{
					AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}}})
			return err
		}
		if err := register(); err != nil {
			b.Fatal(err)
		}
		b.Run(mode+"/read", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, _, err := w.api.CSIVolumes().Info("vol-1", nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, callers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/register/callers=%d", mode, callers), func(b *testing.B) {
				if callers == 1 {
					for i := 0; i < b.N; i++ {
						if err := register(); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				// RunParallel starts parallelism x GOMAXPROCS goroutines.
				b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := register(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

type securityBenchWorld struct {
	api *api.Client
}

// newSecurityBenchWorld starts three servers and the leader's HTTP API,
// with a node that runs the hostpath plugin (so a registration needs no
// plugin call), and returns an API client: with a deploy token over HTTPS
// when secure.
func newSecurityBenchWorld(b *testing.B, secure bool) *securityBenchWorld {
	b.Helper()
	var opts []servertest.ConfigOption
	var pki *tlsutiltest.PKI
	if secure {
		pki = tlsutiltest.NewPKI(b)
		key := make([]byte, 32)
		for i := range key {
			key[i] = byte(i)
		}
		opts = append(opts, servertest.WithTLS(b, pki, key), func(c *server.Config) { c.ACLEnabled = true })
	}
	c := servertest.Cluster(b, 3, opts...)
	leader := c.Leader()
	ctx := context.Background()

	token := ""
	if secure {
		var boot structs.ACLTokenUpsertResponse
		if err := leader.RPC(ctx, "ACL.Bootstrap", &structs.ACLBootstrapRequest{}, &boot); err != nil {
			b.Fatal(err)
		}
		mgmt := boot.Tokens[0].SecretID
		if err := leader.RPC(ctx, "ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{
			Policies:     []*structs.ACLPolicy{{Name: "deploy", Rules: "namespace \"default\" {\n  policy = \"write\"\n}\n"}},
			WriteRequest: structs.WriteRequest{AuthToken: mgmt}}, &structs.GenericResponse{}); err != nil {
			b.Fatal(err)
		}
		var tok structs.ACLTokenUpsertResponse
		if err := leader.RPC(ctx, "ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{
			Tokens:       []*structs.ACLToken{{Name: "ci", Type: structs.ACLTokenTypeClient, Policies: []string{"deploy"}}},
			WriteRequest: structs.WriteRequest{AuthToken: mgmt}}, &tok); err != nil {
			b.Fatal(err)
		}
		token = tok.Tokens[0].SecretID
	}
	if err := leader.RPC(ctx, "Node.Register", &structs.NodeRegisterRequest{
		Node:         statetest.NodeWithPlugin("node-1", "hostpath", false, true, true),
		WriteRequest: structs.WriteRequest{AuthToken: "5d0c1a52-8f7e-4b1d-a6c3-2e9f0b7d4c18"}}, &structs.NodeUpdateResponse{}); err != nil {
		b.Fatal(err)
	}

	srv := httptest.NewUnstartedServer(New(leader, nil))
	cfg := api.Config{Address: "", Token: token}
	if secure {
		https := pki.Cert(b, "https", tlsutil.RoleServer)
		https.VerifyHTTPSClient = true
		conf, err := tlsutil.NewConfigurator(*https)
		if err != nil {
			b.Fatal(err)
		}
		srv.TLS = conf.IncomingHTTPS()
		srv.StartTLS()
		cli := pki.Cert(b, "cli", tlsutil.RoleCLI)
		cfg.TLS = api.TLSConfig{CACert: pki.CAFile, ClientCert: cli.CertFile, ClientKey: cli.KeyFile}
	} else {
		srv.Start()
	}
	b.Cleanup(srv.Close)
	cfg.Address = srv.URL
	client, err := api.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return &securityBenchWorld{api: client}
}
