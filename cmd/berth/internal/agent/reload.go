package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/tlsutil"
)

// reloaders are what SIGHUP reloads: the TLS certificates of the server,
// the client and the HTTPS listener, each by name.
type reloaders struct {
	names []string
	fns   []func() error
}

func (r *reloaders) add(name string, fn func() error) {
	r.names = append(r.names, name)
	r.fns = append(r.fns, fn)
}

// run reloads every part and logs the outcome; a part that fails keeps the
// certificates it had.
func (r *reloaders) run(logger hclog.Logger) {
	if len(r.fns) == 0 {
		logger.Info("sighup: nothing to reload")
		return
	}
	var errs []error
	for i, fn := range r.fns {
		if err := fn(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.names[i], err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		logger.Error("sighup: tls reload failed; keeping the certificates in use", "error", err)
		return
	}
	logger.Info("sighup: tls certificates reloaded")
}

// listenHTTP listens on addr, with TLS when tls.http is on; the HTTPS
// certificates join reload.
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
	if https == nil {
		return l, nil
	}
	reload.add("https", https.Reload)
	return tls.NewListener(l, https.IncomingHTTPS()), nil
}
