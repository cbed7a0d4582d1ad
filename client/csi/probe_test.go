package csi

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/shoenig/test/must"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/berth-csi/berth/client/csitest"
)

// probeServer answers Probe as told. It is a fake because the mock driver
// cannot be made to answer Probe with ready=false, an unset ready, or an
// error: it has no Probe hook.
type probeServer struct {
	csipb.UnimplementedIdentityServer
	resp *csipb.ProbeResponse
	err  error
}

var _ csipb.IdentityServer = (*probeServer)(nil)

func (s *probeServer) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return s.resp, s.err
}

func serveProbe(t *testing.T, srv *probeServer) string {
	return serveFake(t, "probe.sock", func(g *grpc.Server) { csipb.RegisterIdentityServer(g, srv) })
}

// serveFake serves a fake plugin service on a unix socket until the test
// ends; register adds the services.
func serveFake(t *testing.T, name string, register func(*grpc.Server)) string {
	t.Helper()
	sock := filepath.Join(csitest.SocketDir(t), name)
	l, err := net.Listen("unix", sock)
	must.NoError(t, err)
	g := grpc.NewServer()
	register(g)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(l)
	}()
	t.Cleanup(func() {
		g.Stop()
		<-done
	})
	return sock
}

func TestClient_Probe_Semantics(t *testing.T) {
	cases := []struct {
		name      string
		srv       *probeServer
		wantReady bool
		wantCode  Code
	}{
		{"ready true", &probeServer{resp: &csipb.ProbeResponse{Ready: wrapperspb.Bool(true)}}, true, CodeOK},
		{"ready unset means ready", &probeServer{resp: &csipb.ProbeResponse{}}, true, CodeOK},
		{"ready false: initialising", &probeServer{resp: &csipb.ProbeResponse{Ready: wrapperspb.Bool(false)}}, false, CodeOK},
		{"failed precondition: unhealthy", &probeServer{err: status.Error(codes.FailedPrecondition, "missing dependency")}, false, CodeFailedPrecondition},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, serveProbe(t, tc.srv))
			ready, err := c.Probe(context.Background())
			must.Eq(t, tc.wantReady, ready)
			must.Eq(t, tc.wantCode, CodeOf(err))
			if err != nil {
				must.StrContains(t, err.Error(), `plugin "mock": Probe: FailedPrecondition: missing dependency`)
			}
		})
	}
}
