package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
)

// version is the plugin's vendor_version, set at build time with
// -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program: 0 after a clean stop, 1 on a runtime failure,
// 2 on bad flags.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, getenv, stderr)
	switch {
	case errors.Is(err, errShowVersion):
		fmt.Fprintf(stdout, "berth-hostpath v%s\n", version)
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "berth-hostpath: %v\n", err)
		return 2
	}
	log := hclog.New(&hclog.LoggerOptions{
		Name:   "berth-hostpath",
		Level:  hclog.LevelFromString(cfg.LogLevel),
		Output: stderr,
	})
	d, err := newDriver(cfg, log)
	if err != nil {
		log.Error("cannot start", "error", err)
		return 1
	}
	ln, err := listen(cfg.Endpoint)
	if err != nil {
		log.Error("cannot start", "error", err)
		return 1
	}
	if err := serve(ctx, d, ln); err != nil {
		log.Error("stopped", "error", err)
		return 1
	}
	log.Info("stopped")
	return 0
}
