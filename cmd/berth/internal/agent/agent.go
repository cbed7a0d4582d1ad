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
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/client"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/cmd/berth/internal/httpapi"
	"github.com/berth-csi/berth/cmd/berth/internal/ui"
	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/structs"
)

// shutdownTimeout bounds a graceful HTTP shutdown.
const shutdownTimeout = 10 * time.Second

// Run is `berth agent ...`. It returns the process exit code: 0 after a
// clean shutdown, 1 when the agent cannot start or fails, 2 on bad usage.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		var u errUsage
		if errors.Is(err, errHelp) {
			return 0 // the help was asked for, and printed
		}
		if errors.As(err, &u) {
			fmt.Fprintf(stderr, "Error: %v\nRun 'berth agent -h' for the options.\n", err)
			return 2
		}
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := run(ctx, cfg, stderr, hup); err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

// run runs the agent until ctx ends; each value on hup (SIGHUP) reloads
// its TLS certificates.
func run(ctx context.Context, cfg *Config, stderr io.Writer, hup <-chan os.Signal) error {
	logger := hclog.New(&hclog.LoggerOptions{
		Name:       "berth",
		Level:      hclog.LevelFromString(cfg.LogLevel),
		Output:     stderr,
		JSONFormat: cfg.LogJSON,
	})
	for _, w := range securityWarnings(cfg) {
		logger.Warn(w)
	}
	// Before the server and client start: raft's and serf's metrics from
	// their first moments go to the registry too.
	tel, err := telemetry.New("berth")
	if err != nil {
		return err
	}
	var reload reloaders
	if cfg.Dev && cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "berth-dev-")
		if err != nil {
			return fmt.Errorf("dev data dir: %w", err)
		}
		defer func() {
			unmountUnder(dir, logger)
			_ = os.RemoveAll(dir)
		}()
		cfg.DataDir = dir
	}

	var backend httpapi.Backend
	if cfg.Server.Enabled {
		srv, err := startServer(cfg, logger)
		if err != nil {
			return err
		}
		defer func() {
			if err := srv.Shutdown(); err != nil {
				logger.Error("server shutdown", "error", err)
			}
		}()
		backend = srv
		if err := tel.Registry.Register(srv.MetricsCollector()); err != nil {
			return fmt.Errorf("server metrics: %w", err)
		}
		if cfg.TLS.RPC {
			reload.add("server", srv.PrepareReloadTLS)
		}
		if cfg.Dev || len(cfg.Client.Servers) == 0 {
			// A server that is also a client joins itself, as -dev does.
			cfg.Client.Servers = []string{srv.RPCAddr()}
		}
	}
	if cfg.Client.Enabled {
		c, stop, err := startClient(ctx, cfg, logger)
		if err != nil {
			return err
		}
		defer stop()
		if cfg.TLS.RPC {
			reload.add("client", c.PrepareReloadTLS)
		}
		if backend == nil {
			backend = c
		}
	}
	return serveHTTP(ctx, cfg, backend, logger, hup, &reload, tel)
}

func startServer(cfg *Config, logger hclog.Logger) (*server.Server, error) {
	scfg := server.DefaultConfig()
	scfg.NodeName = cfg.Name
	scfg.DataDir = filepath.Join(cfg.DataDir, "server")
	scfg.BindAddr = cfg.BindAddr
	scfg.RPCPort = cfg.Ports.RPC
	scfg.SerfPort = cfg.Ports.Serf
	scfg.BootstrapExpect = cfg.Server.BootstrapExpect
	scfg.Join = cfg.Server.Join
	if cfg.Server.JobMaxCount != 0 {
		scfg.JobMaxCount = cfg.Server.JobMaxCount
	}
	if r := cfg.Server.MaxHeartbeatsPerSecond; r != nil {
		scfg.MaxHeartbeatsPerSecond = *r
	}
	scfg.GossipLocal = cfg.Dev
	scfg.TLS = cfg.rpcTLS()
	scfg.EncryptKey = cfg.encryptKey
	scfg.ACLEnabled = cfg.ACL.Enabled
	cfg.Server.applyGC(scfg)
	scfg.Logger = logger
	return server.New(scfg)
}

// startClient starts the client (and in dev mode the built-in plugin) and
// returns a stop function that waits for both to end.
func startClient(ctx context.Context, cfg *Config, logger hclog.Logger) (*client.Client, func(), error) {
	ccfg := client.DefaultConfig()
	ccfg.DataDir = cfg.DataDir
	ccfg.Servers = cfg.Client.Servers
	if cfg.Name != "" {
		ccfg.NodeName = cfg.Name
	}
	if cfg.Client.ControllerConcurrency != 0 {
		ccfg.ControllerConcurrency = cfg.Client.ControllerConcurrency
	}
	if cfg.Client.Datacenter != "" {
		ccfg.Datacenter = cfg.Client.Datacenter
	}
	ccfg.HTTPAddr = net.JoinHostPort(cfg.BindAddr, strconv.Itoa(cfg.Ports.HTTP))
	ccfg.BindAddr = cfg.BindAddr
	ccfg.TLS = cfg.rpcTLS()
	cfg.applyClient(ccfg)
	cfg.applyDrivers(ccfg)
	ccfg.Logger = logger
	for _, p := range cfg.Plugins {
		ccfg.Plugins = append(ccfg.Plugins, &dynamicplugins.PluginInfo{
			ID: p.ID, Type: structs.CSIPluginType(p.Type), Socket: p.Socket, Source: "config"})
	}
	var plugin *devPlugin
	if cfg.Dev {
		// The dev data dir goes away with the agent: its tasks must too.
		ccfg.StopAllocsOnShutdown = true
		var err error
		if plugin, err = startDevPlugin(cfg.DataDir, logger); err != nil {
			return nil, nil, err
		}
		ccfg.Plugins = append(ccfg.Plugins, &dynamicplugins.PluginInfo{
			ID: devPluginID, Type: structs.CSIPluginTypeMonolith, Socket: plugin.socket, Source: "config"})
	}
	c, err := client.New(ccfg)
	if err != nil {
		if plugin != nil {
			plugin.stop(5 * time.Second)
		}
		return nil, nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(cctx)
	}()
	stop := func() {
		cancel()
		<-done
		if plugin != nil {
			plugin.stop(5 * time.Second)
		}
	}
	return c, stop, nil
}

func serveHTTP(ctx context.Context, cfg *Config, backend httpapi.Backend, logger hclog.Logger,
	hup <-chan os.Signal, reload *reloaders, tel *telemetry.Telemetry) error {
	httpAddr := net.JoinHostPort(cfg.BindAddr, strconv.Itoa(cfg.Ports.HTTP))
	l, err := listenHTTP(httpAddr, cfg.TLS, reload)
	if err != nil {
		return fmt.Errorf("HTTP API: %w", err)
	}
	api := httpapi.New(backend, logger.Named("http"), httpapi.WithPrometheus(tel.Handler()))
	if cfg.EnableDebug {
		api = httpapi.WithDebug(api, backend)
		logger.Warn("enable_debug: runtime profiles are served at /debug/pprof/ (with ACLs on, to management tokens only)")
	}
	// The web UI at /ui/ (and / redirects there); the API is unchanged.
	api = ui.Mount(api)
	hs := &http.Server{
		Handler: api,
		// A request's headers must arrive in 10 s, its body within the
		// handler's own deadline (httpapi); an idle keep-alive connection
		// is closed after 2 min. There is no write timeout: blocking
		// queries answer after up to their wait.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		// Failed TLS handshakes and the like, with the peer's address.
		ErrorLog: logger.Named("http").StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
	}
	httpErr := make(chan error, 1)
	go func() { httpErr <- hs.Serve(l) }()
	logger.Info("agent running", "http_addr", l.Addr().String(), "data_dir", cfg.DataDir,
		"server", cfg.Server.Enabled, "client", cfg.Client.Enabled, "dev", cfg.Dev,
		"tls_http", cfg.TLS.HTTP, "tls_rpc", cfg.TLS.RPC, "acl", cfg.ACL.Enabled)
	if cfg.Dev {
		logger.Warn("dev mode: one server and one client in this process; data lives in a temp dir unless -data-dir is given")
	}

wait:
	for {
		select {
		case <-ctx.Done():
			logger.Info("shutting down on signal")
			break wait
		case err := <-httpErr:
			return fmt.Errorf("HTTP API stopped: %w", err)
		case <-hup:
			reload.run(logger)
		}
	}
	// A server's blocking queries answer now rather than at the end of
	// their wait, which would hold the HTTP shutdown (an open web UI always
	// has one in flight). A client agent's are RPCs to the servers, ended
	// by their request's context, which the signal has cancelled.
	if q, ok := backend.(interface{ EndBlockingQueries() }); ok {
		q.EndBlockingQueries()
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		logger.Warn("HTTP shutdown", "error", err)
	}
	return nil
}

// isLoopback reports whether addr (an IP) is a loopback address.
func isLoopback(addr string) bool {
	ip := net.ParseIP(addr)
	return ip != nil && ip.IsLoopback()
}
