package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

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

	address string
	secrets *secretFlag // -secret, for the commands that define it
}

// generalHelp documents the flags every command takes.
const generalHelp = `General Options:

  -address=<addr>
    The address of a berth agent's HTTP API. Overrides the BERTH_ADDR
    environment variable. Default = http://127.0.0.1:4746
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

// client returns an API client for -address, else BERTH_ADDR, else the
// default, bound to ctx.
func (m *meta) client(ctx context.Context) (*api.Client, error) {
	addr := m.address
	if addr == "" {
		addr = m.getenv(api.AddressEnv)
	}
	if addr == "" {
		addr = api.DefaultAddress
	}
	c, err := api.NewClient(api.Config{Address: addr})
	if err != nil {
		return nil, fmt.Errorf("%v; set -address or %s to the agent's HTTP address, e.g. %s", err, api.AddressEnv, api.DefaultAddress)
	}
	return c.WithContext(ctx), nil
}
