package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/berth-csi/berth/api"
)

// meta is what every command shares: its outputs, the environment and the
// general flags.
type meta struct {
	cmd    *command
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string

	// The general options (-address, -token and TLS), as given; client
	// fills in the environment's for those left out.
	address       string
	token         string
	caCert        string
	clientCert    string
	clientKey     string
	tlsServerName string

	secrets *secretFlag // -secret, for the commands that define it
}

// globalOptions are the options every command takes, before or after its
// name.
var globalOptions = map[string]bool{
	"address": true, "token": true, "ca-cert": true, "client-cert": true,
	"client-key": true, "tls-server-name": true,
}

// generalHelp documents the flags every command takes.
const generalHelp = `General Options:

  -address=<addr>
    The address of a berth agent's HTTP API. Overrides the BERTH_ADDR
    environment variable. Default = http://127.0.0.1:4746

  -token=<secret-id>
    The ACL token to send. Overrides the BERTH_TOKEN environment variable.

  -ca-cert=<path>
    The CA certificate that signed the agent's HTTPS certificate.
    Overrides the BERTH_CACERT environment variable.

  -client-cert=<path>
    The client certificate to present to an agent that verifies HTTPS
    clients. Overrides the BERTH_CLIENT_CERT environment variable.

  -client-key=<path>
    The key of -client-cert. Overrides the BERTH_CLIENT_KEY environment
    variable.

  -tls-server-name=<name>
    The name the agent's certificate must carry (e.g. server.global.berth).
    Overrides the BERTH_TLS_SERVER_NAME environment variable.
`

// usage is the command's full -h text.
func (c *command) usage() string {
	return "Usage: berth " + c.name + " " + strings.TrimLeft(c.help, " ") + "\n" + generalHelp
}

// flagSet returns the command's flags with the general ones defined.
func (m *meta) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet(m.cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&m.address, "address", "", "")
	fs.StringVar(&m.token, "token", "", "")
	fs.StringVar(&m.caCert, "ca-cert", "", "")
	fs.StringVar(&m.clientCert, "client-cert", "", "")
	fs.StringVar(&m.clientKey, "client-key", "", "")
	fs.StringVar(&m.tlsServerName, "tls-server-name", "", "")
	return fs
}

// parse parses flags that may come before, between or after the
// positional arguments (a "--" ends the flags) and checks how many
// positional arguments there are, then any -secret. On failure it prints
// and returns the exit status; ok is false.
func (m *meta) parse(fs *flag.FlagSet, args []string, minArgs, maxArgs int) (pos []string, status int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(m.stdout, m.cmd.usage())
				return nil, exitOK, false
			}
			return nil, m.usageError("%v", err), false
		}
		rest := fs.Args()
		consumed := args[:len(args)-len(rest)]
		if len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	switch {
	case len(pos) < minArgs:
		return nil, m.usageError("this command takes %s", argCount(minArgs, maxArgs)), false
	case maxArgs >= 0 && len(pos) > maxArgs:
		return nil, m.usageError("this command takes %s, got %d: %s", argCount(minArgs, maxArgs), len(pos), strings.Join(pos, " ")), false
	case m.secrets != nil && m.secrets.err != nil:
		return nil, m.usageError("%v", m.secrets.err), false
	}
	return pos, exitOK, true
}

func argCount(lo, hi int) string {
	switch {
	case lo == hi && lo == 1:
		return "one argument"
	case lo == hi:
		return fmt.Sprintf("%d arguments", lo)
	case lo == 0 && hi == 1:
		return "at most one argument"
	}
	return fmt.Sprintf("%d to %d arguments", lo, hi)
}

// usageError prints the problem and the usage; it returns exitUsage.
func (m *meta) usageError(format string, args ...any) int {
	fmt.Fprintf(m.stderr, "Error: %s\n\n%s", fmt.Sprintf(format, args...), m.cmd.usage())
	return exitUsage
}

// fail prints an error; it returns exitError.
func (m *meta) fail(format string, args ...any) int {
	fmt.Fprintf(m.stderr, "Error: %s\n", fmt.Sprintf(format, args...))
	return exitError
}

// cliRetryMaxWait bounds the retries of a command's request after an
// answer that says it was not applied (no leader yet, a plugin restarting):
// long enough for an election, short enough for a person at a terminal.
const cliRetryMaxWait = 5 * time.Second

// client returns an API client for -address, else BERTH_ADDR, else the
// default, with the token and TLS files of the flags or else of the
// environment, bound to ctx.
func (m *meta) client(ctx context.Context) (*api.Client, error) {
	cfg := api.ConfigFromEnv(m.getenv)
	for _, o := range []struct {
		flag  string
		field *string
	}{
		{m.address, &cfg.Address}, {m.token, &cfg.Token}, {m.caCert, &cfg.TLS.CACert},
		{m.clientCert, &cfg.TLS.ClientCert}, {m.clientKey, &cfg.TLS.ClientKey}, {m.tlsServerName, &cfg.TLS.TLSServerName},
	} {
		if o.flag != "" {
			*o.field = o.flag
		}
	}
	cfg.Retry = api.Retry{MaxWait: cliRetryMaxWait}
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("%v; check -address or %s (the agent's HTTP address, e.g. %s) and the -ca-cert, -client-cert and -client-key files",
			err, api.AddressEnv, api.DefaultAddress)
	}
	return c.WithContext(ctx), nil
}
