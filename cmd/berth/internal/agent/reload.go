package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/net/netutil"

	"github.com/berth-csi/berth/tlsutil"
)

// reloaders are what SIGHUP reloads: the TLS certificates of the server,
// the client and the HTTPS listener, each by name. Each part prepares its
// new files (reads and checks them) and hands back the commit that puts
// them in use.
type reloaders struct {
	names    []string
	prepares []func() (commit func(), err error)
}

func (r *reloaders) add(name string, prepare func() (commit func(), err error)) {
	r.names = append(r.names, name)
	r.prepares = append(r.prepares, prepare)
}

// run reloads every part or none: it prepares them all first and commits
// only when every one prepared, so the one outcome it logs is true of
// every part.
func (r *reloaders) run(logger hclog.Logger) {
	if len(r.prepares) == 0 {
		logger.Info("sighup: nothing to reload")
		return
	}
	var (
		commits []func()
		errs    []error
	)
	for i, prepare := range r.prepares {
		commit, err := prepare()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.names[i], err))
			continue
		}
		commits = append(commits, commit)
	}
	if err := errors.Join(errs...); err != nil {
		logger.Error("sighup: tls reload failed; keeping the certificates in use", "error", err)
		return
	}
	for _, commit := range commits {
		commit()
	}
	logger.Info("sighup: tls certificates reloaded", "parts", strings.Join(r.names, ","))
}

// listenHTTP listens on addr, with TLS when tls.http is on; the HTTPS
// certificates join reload.
// maxHTTPConns bounds the HTTP API's open connections: blocking queries
// hold one each for up to their wait.
const maxHTTPConns = 4096

func listenHTTP(addr string, t *TLSConfig, reload *reloaders) (net.Listener, error) {
	var https *tlsutil.Configurator
	if t != nil && t.HTTP {
		cfg := t.config()
		cfg.EnableRPC = false // this Configurator is the listener's
		var err error
		if https, err = tlsutil.NewConfigurator(cfg); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w (is another agent using this -http-port?)", addr, err)
	}
	// At most maxHTTPConns connections at once: past it, new ones wait in
	// the kernel's backlog, so a flood of them cannot take the process's
	// file descriptors (the RPC port has caps of its own).
	l = netutil.LimitListener(l, maxHTTPConns)
	if https == nil {
		return l, nil
	}
	reload.add("https", https.PrepareReload)
	return tls.NewListener(l, https.IncomingHTTPS()), nil
}
