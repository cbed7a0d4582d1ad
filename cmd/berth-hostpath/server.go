package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// stopTimeout bounds the graceful stop: RPCs still running after it (a
// long copy) are cut off.
const stopTimeout = 10 * time.Second

// listen opens the unix socket at path. A stale socket left by a plugin
// that died is removed; a socket something still answers on, or a file
// that is not a socket, is an error.
func listen(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("endpoint %s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("endpoint %s: another process is serving on it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("endpoint %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("endpoint %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return ln, nil
}

// newGRPCServer registers the three services of d.
func newGRPCServer(d *driver) *grpc.Server {
	srv := grpc.NewServer(grpc.UnaryInterceptor(logCalls(d.log)))
	csi.RegisterIdentityServer(srv, &identityServer{driver: d})
	csi.RegisterControllerServer(srv, &controllerServer{driver: d})
	csi.RegisterNodeServer(srv, &nodeServer{driver: d})
	return srv
}

// serve answers on ln until ctx is done, then stops gracefully (at most
// stopTimeout) and removes the socket.
func serve(ctx context.Context, d *driver, ln net.Listener) error {
	srv := newGRPCServer(d)
	sock := ln.Addr().String()
	defer os.Remove(sock)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	d.log.Info("serving", "endpoint", sock, "name", d.cfg.Name, "version", version, "node_id", d.cfg.NodeID)

	select {
	case err := <-errc:
		return fmt.Errorf("serve on %s: %w", sock, err)
	case <-ctx.Done():
	}
	d.log.Info("stopping")
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(stopTimeout):
		d.log.Warn("calls still running after the stop timeout; cutting them off", "timeout", stopTimeout)
		srv.Stop()
		<-stopped
	}
	<-errc
	return nil
}

// logCalls logs every call with its request stripped of secrets and mount
// flags (sanitize): failures at warn, the rest at debug, and the Identity
// service, which COs probe often, at trace.
func logCalls(log hclog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		method := path.Base(info.FullMethod)
		took := time.Since(start)
		reqMsg, _ := req.(proto.Message)
		switch {
		case err != nil:
			st := status.Convert(err)
			log.Warn("call failed", "method", method, "code", st.Code().String(), "error", st.Message(),
				"duration", took, "request", sanitize(reqMsg))
		case strings.HasPrefix(info.FullMethod, "/csi.v1.Identity/"):
			if log.IsTrace() {
				log.Trace("call", "method", method, "duration", took)
			}
		case log.IsDebug():
			respMsg, _ := resp.(proto.Message)
			log.Debug("call", "method", method, "duration", took, "request", sanitize(reqMsg), "response", sanitize(respMsg))
		}
		return resp, err
	}
}
