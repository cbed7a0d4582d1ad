package command

import (
	"bytes"
	"testing"

	"github.com/shoenig/test/must"
)

func TestApp_Run_UsageAndHelp(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"no args", nil, 2, "", "Usage: berth <command>"},
		{"-h", []string{"-h"}, 0, "volume status", ""},
		{"help", []string{"help"}, 0, "operator raft list-peers", ""},
		{"help for a command", []string{"help", "volume", "status"}, 0, "Usage: berth volume status [options] [volume]", ""},
		{"help for a noun", []string{"help", "volume"}, 0, "Usage: berth volume <subcommand>", ""},
		{"help for nothing", []string{"help", "nope"}, 2, "", `unknown command "nope"`},
		{"unknown command", []string{"nope"}, 2, "", `Error: unknown command "nope"`},
		{"noun alone", []string{"volume"}, 2, "", "register         Register an existing CSI volume"},
		{"noun alone lists create", []string{"volume"}, 2, "", "    create           Create a CSI volume through its plugin\n"},
		{"noun alone lists delete", []string{"volume"}, 2, "", "    delete           Delete a CSI volume in its storage provider\n"},
		{"noun alone lists snapshot verbs", []string{"volume"}, 2, "", "    snapshot create  Snapshot a CSI volume through its plugin\n" +
			"    snapshot list    List the snapshots CSI plugins hold\n" +
			"    snapshot delete  Delete a snapshot through its CSI plugin\n"},
		{"snapshot group alone", []string{"volume", "snapshot"}, 2, "", "Usage: berth volume snapshot <subcommand> [options] [args]\n\n" +
			"Subcommands:\n" +
			"    create  Snapshot a CSI volume through its plugin\n" +
			"    list    List the snapshots CSI plugins hold\n" +
			"    delete  Delete a snapshot through its CSI plugin\n"},
		{"snapshot group -h", []string{"volume", "snapshot", "-h"}, 0, "Usage: berth volume snapshot <subcommand>", ""},
		{"help for the snapshot group", []string{"help", "volume", "snapshot"}, 0, "    list    List the snapshots CSI plugins hold\n", ""},
		{"unknown snapshot verb", []string{"volume", "snapshot", "restore"}, 2, "", `Error: unknown command "volume snapshot restore"`},
		{"main help lists snapshot create", []string{"-h"}, 0, "volume snapshot create        Snapshot a CSI volume through its plugin", ""},
		{"help for snapshot create", []string{"help", "volume", "snapshot", "create"}, 0,
			"Usage: berth volume snapshot create [options] <volume> [<name>]", ""},
		{"help for snapshot delete", []string{"volume", "snapshot", "delete", "-h"}, 0,
			"Usage: berth volume snapshot delete [options] <plugin> <snapshot>", ""},
		{"main help lists create", []string{"-h"}, 0, "volume create", ""},
		{"help for create", []string{"help", "volume", "create"}, 0, "Usage: berth volume create [options] <file>", ""},
		{"help for delete", []string{"help", "volume", "delete"}, 0, "-secret <key>=<value>", ""},
		{"noun -h", []string{"volume", "-h"}, 0, "Usage: berth volume <subcommand>", ""},
		{"unknown verb", []string{"volume", "statuz"}, 2, "", `Error: unknown command "volume statuz"`},
		{"two-word noun alone", []string{"operator", "raft"}, 2, "", "list-peers"},
		{"command -h", []string{"volume", "status", "-h"}, 0, "-verbose", ""},
		{"command -help after args", []string{"volume", "deregister", "data", "-help"}, 0, "-force", ""},
		{"unknown flag", []string{"node", "status", "-bogus"}, 2, "", "Error: flag provided but not defined: -bogus\n\nUsage: berth node status"},
		{"too many args", []string{"volume", "status", "a", "b"}, 2, "", "this command takes at most one argument, got 2: a b"},
		{"missing arg", []string{"volume", "deregister"}, 2, "", "Error: this command takes one argument"},
		{"register missing file", []string{"volume", "register"}, 2, "", "Usage: berth volume register [options] <file>"},
		{"members takes no args", []string{"server", "members", "x"}, 2, "", "this command takes 0 arguments"},
		{"version", []string{"version"}, 0, "berth v" + Version + "\n", ""},
		{"-version", []string{"-version"}, 0, "berth v", ""},
		{"-address and no command", []string{"-address", "http://x:1"}, 2, "", "Error: -address http://x:1 names no command"},
		{"agent is dispatched", []string{"agent", "-dev", "-http-port", "1"}, 3, "agent called with -dev -http-port 1", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, "http://127.0.0.1:1", "", tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			if tc.wantStdout != "" {
				must.StrContains(t, r.stdout, tc.wantStdout)
			}
		})
	}
}

func TestApp_Run_AgentMissing(t *testing.T) {
	var out, errb bytes.Buffer
	app := &App{Stdout: &out, Stderr: &errb}
	must.EqOp(t, 1, app.Run(t.Context(), []string{"agent"}))
	must.StrContains(t, errb.String(), "built without the agent")
}

func TestApp_Run_AddressFlagBeatsEnv(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name string
		args []string
	}{
		{"flag first", []string{"volume", "status", "-address", f.srv.URL}},
		{"flag with =", []string{"volume", "status", "-address=" + f.srv.URL}},
		{"flag after the positional", []string{"volume", "status", "data", "-address", f.srv.URL}},
		{"flag before the command", []string{"-address", f.srv.URL, "volume", "status"}},
		{"flag with = before the command", []string{"--address=" + f.srv.URL, "volume", "status", "data"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The environment points at nothing; only the flag reaches the fixture.
			r := runCLI(t, "http://127.0.0.1:1", "", tc.args...)
			must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
		})
	}
}

func TestApp_Run_Unreachable(t *testing.T) {
	r := runCLI(t, "http://127.0.0.1:1", "", "volume", "status")
	must.EqOp(t, 1, r.code)
	must.StrContains(t, r.stderr, "Error: list volumes: cannot reach berth at http://127.0.0.1:1")
	must.StrContains(t, r.stderr, "Set -address or BERTH_ADDR")
}
