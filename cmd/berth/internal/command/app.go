package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Version is berth's version, set at build time with
// -ldflags "-X github.com/berth-csi/berth/cmd/berth/internal/command.Version=...".
var Version = "0.1.0-dev"

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// AgentFunc runs `berth agent` with the arguments after "agent".
type AgentFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// App is the berth CLI with its inputs and outputs injected.
type App struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string // nil means os.Getenv
	Agent  AgentFunc           // runs `berth agent ...`; nil makes it an error
}

// command is one `berth <noun> <verb>`.
type command struct {
	name     string // "volume status"
	synopsis string
	help     string // what follows "Usage: berth <name> " in -h
	run      func(ctx context.Context, m *meta, args []string) int
}

// commands lists every command but agent and version, which Run handles.
var commands = []*command{
	serverMembersCommand,
	operatorRaftListPeersCommand,
	operatorGossipKeygenCommand,
	tlsCACreateCommand, tlsCertCreateCommand,
	operatorKeyringListCommand, operatorKeyringRotateCommand,
	systemGCCommand,
	operatorSnapshotSaveCommand, operatorSnapshotRestoreCommand, operatorSnapshotInspectCommand,
	nodeStatusCommand, nodeDrainCommand, nodeEligibilityCommand,
	pluginStatusCommand,
	volumeRegisterCommand,
	volumeCreateCommand,
	volumeStatusCommand,
	volumeDeregisterCommand,
	volumeDeleteCommand,
	volumeSnapshotCreateCommand,
	volumeSnapshotListCommand,
	volumeSnapshotDeleteCommand,
	volumeDetachCommand,
	jobRunCommand,
	jobStatusCommand,
	jobStopCommand,
	jobPlanCommand,
	jobHistoryCommand,
	jobRevertCommand,
	allocStatusCommand,
	allocLogsCommand,
	eventStreamCommand,
	aclBootstrapCommand,
	aclTokenCreateCommand,
	aclTokenListCommand,
	aclTokenInfoCommand,
	aclTokenUpdateCommand,
	aclTokenDeleteCommand,
	aclTokenSelfCommand,
	aclPolicyApplyCommand,
	aclPolicyListCommand,
	aclPolicyInfoCommand,
	aclPolicyDeleteCommand,
}

// Run runs the command args name and returns its exit status.
func (a *App) Run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.Stderr, mainHelp())
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(a.Stdout, mainHelp())
		return exitOK
	case "help":
		return a.help(args[1:])
	case "version", "-v", "-version", "--version":
		fmt.Fprintf(a.Stdout, "berth v%s\n", Version)
		return exitOK
	case "agent":
		if a.Agent == nil {
			fmt.Fprintln(a.Stderr, "Error: this berth binary was built without the agent")
			return exitError
		}
		return a.Agent(ctx, args[1:], a.Stdout, a.Stderr)
	}
	global, args := leadingGlobalOptions(args)
	if len(args) == 0 {
		fmt.Fprintf(a.Stderr, "Error: %s names no command\n\n%s", strings.Join(global, " "), mainHelp())
		return exitUsage
	}
	c, rest := lookup(args)
	if c == nil {
		return a.unknown(args)
	}
	return c.run(ctx, a.meta(c), append(global, rest...))
}

// leadingGlobalOptions takes the general options (-address, -token, the TLS
// ones: globalOptions) from before the command's name, as in `berth
// -address=http://h:4746 node status`, and returns them to be given to the
// command.
func leadingGlobalOptions(args []string) (global, rest []string) {
	for len(args) > 0 {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		if !strings.HasPrefix(args[0], "-") || !globalOptions[name] {
			break
		}
		n := 1
		if !hasValue && len(args) > 1 {
			n = 2
		}
		global, args = append(global, args[:n]...), args[n:]
	}
	return global, args
}

func (a *App) meta(c *command) *meta {
	getenv := a.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	stdin := a.Stdin
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	return &meta{cmd: c, stdin: stdin, stdout: a.Stdout, stderr: a.Stderr, getenv: getenv}
}

// lookup finds the command whose words begin args, the longest first.
func lookup(args []string) (*command, []string) {
	var best *command
	bestLen := 0
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(words) > len(args) || len(words) <= bestLen {
			continue
		}
		match := true
		for i, w := range words {
			if args[i] != w {
				match = false
				break
			}
		}
		if match {
			best, bestLen = c, len(words)
		}
	}
	if best == nil {
		return nil, nil
	}
	return best, args[bestLen:]
}

// help is `berth help [command...]`.
func (a *App) help(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.Stdout, mainHelp())
		return exitOK
	}
	if c, rest := lookup(args); c != nil && len(rest) == 0 {
		fmt.Fprint(a.Stdout, c.usage())
		return exitOK
	}
	if sub := subcommands(args); len(sub) > 0 {
		fmt.Fprint(a.Stdout, groupHelp(args, sub))
		return exitOK
	}
	fmt.Fprintf(a.Stderr, "Error: unknown command %q\n\n%s", strings.Join(args, " "), mainHelp())
	return exitUsage
}

// unknown answers a command line that names no command: a noun alone
// lists its verbs; anything else is a usage error.
func (a *App) unknown(args []string) int {
	// The words before the first flag are the command's name.
	var words []string
	for _, w := range args {
		if strings.HasPrefix(w, "-") {
			break
		}
		words = append(words, w)
	}
	for n := len(words); n > 0; n-- {
		sub := subcommands(words[:n])
		if len(sub) == 0 {
			continue
		}
		if n == len(args)-1 && isHelpFlag(args[n]) {
			fmt.Fprint(a.Stdout, groupHelp(words[:n], sub))
			return exitOK
		}
		if n < len(words) {
			fmt.Fprintf(a.Stderr, "Error: unknown command %q\n\n", strings.Join(words[:n+1], " "))
		}
		fmt.Fprint(a.Stderr, groupHelp(words[:n], sub))
		return exitUsage
	}
	fmt.Fprintf(a.Stderr, "Error: unknown command %q\n\n%s", args[0], mainHelp())
	return exitUsage
}

func isHelpFlag(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

// subcommands lists the commands under the words prefix.
func subcommands(prefix []string) []*command {
	p := strings.Join(prefix, " ") + " "
	var out []*command
	for _, c := range commands {
		if strings.HasPrefix(c.name, p) {
			out = append(out, c)
		}
	}
	return out
}

func mainHelp() string {
	var b strings.Builder
	b.WriteString("Usage: berth <command> [<subcommand>] [options] [args]\n\nCommands:\n")
	rows := [][2]string{{"agent", "Run a berth agent: a server, a client or both (-dev to try berth out)"}}
	for _, c := range commands {
		rows = append(rows, [2]string{c.name, c.synopsis})
	}
	rows = append(rows, [2]string{"version", "Print the berth version"})
	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	writeCommandRows(&b, rows)
	b.WriteString("\nRun \"berth <command> -h\" for a command's options.\n")
	return b.String()
}

func groupHelp(prefix []string, sub []*command) string {
	var b strings.Builder
	name := strings.Join(prefix, " ")
	fmt.Fprintf(&b, "Usage: berth %s <subcommand> [options] [args]\n\nSubcommands:\n", name)
	rows := make([][2]string, len(sub))
	for i, c := range sub {
		rows[i] = [2]string{strings.TrimPrefix(c.name, name+" "), c.synopsis}
	}
	writeCommandRows(&b, rows)
	fmt.Fprintf(&b, "\nRun \"berth %s <subcommand> -h\" for a subcommand's options.\n", name)
	return b.String()
}

func writeCommandRows(b *strings.Builder, rows [][2]string) {
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	for _, r := range rows {
		fmt.Fprintf(b, "    %-*s  %s\n", width, r[0], r[1])
	}
}
