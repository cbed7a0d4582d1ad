package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/cmd/berth/internal/httpapi"
	"github.com/berth-csi/berth/server"
)

// shutdownTimeout bounds a graceful HTTP shutdown.
const shutdownTimeout = 10 * time.Second

// Run is `berth agent ...`. It returns the process exit code: 0 after a
// clean shutdown, 1 when the agent cannot start or fails, 2 on bad usage.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		var u errUsage
		if errors.As(err, &u) {
			if !errors.Is(err, errHelp) {
				fmt.Fprintf(stderr, "Error: %v\nRun 'berth agent -h' for the options.\n", err)
			}
			return 2
		}
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, stderr); err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, cfg *Config, stderr io.Writer) error {
	logger := hclog.New(&hclog.LoggerOptions{
		Name:       "berth",
		Level:      hclog.LevelFromString(cfg.LogLevel),
		Output:     stderr,
		JSONFormat: cfg.LogJSON,
	})
	if cfg.Client.Enabled && !cfg.Dev {
		return errors.New("berth agent -client: the client agent is not part of this build yet; run servers with -server, or -dev")
	}
	if cfg.Dev && cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "berth-dev-")
		if err != nil {
			return fmt.Errorf("dev data dir: %w", err)
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	}

	scfg := server.DefaultConfig()
	scfg.NodeName = cfg.Name
	scfg.DataDir = cfg.DataDir
	scfg.BindAddr = cfg.BindAddr
	scfg.RPCPort = cfg.Ports.RPC
	scfg.SerfPort = cfg.Ports.Serf
	scfg.BootstrapExpect = cfg.Server.BootstrapExpect
	scfg.Join = cfg.Server.Join
	scfg.GossipLocal = cfg.Dev
	scfg.Logger = logger
	srv, err := server.New(scfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Shutdown(); err != nil {
			logger.Error("server shutdown", "error", err)
		}
	}()

	httpAddr := net.JoinHostPort(cfg.BindAddr, strconv.Itoa(cfg.Ports.HTTP))
	l, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return fmt.Errorf("HTTP API: listen on %s: %w (is another agent using -http-port %d?)", httpAddr, err, cfg.Ports.HTTP)
	}
	hs := &http.Server{
		Handler:           httpapi.New(srv, logger.Named("http")),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	httpErr := make(chan error, 1)
	go func() { httpErr <- hs.Serve(l) }()
	logger.Info("agent running", "http_addr", l.Addr().String(), "rpc_addr", srv.RPCAddr(),
		"serf_addr", srv.SerfAddr(), "data_dir", cfg.DataDir, "dev", cfg.Dev)
	if cfg.Dev {
		logger.Warn("dev mode: data lives in a temp dir and is removed on exit; the client agent and built-in hostpath plugin are not part of this build yet")
	}

	select {
	case <-ctx.Done():
		logger.Info("shutting down on signal")
	case err := <-httpErr:
		return fmt.Errorf("HTTP API stopped: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		logger.Warn("HTTP shutdown", "error", err)
	}
	return nil
}
