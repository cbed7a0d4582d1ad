package command

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/cmd/berth/internal/httpapi"
	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

const drainNodeID = "d7a1e000-1111-4c4c-8888-000000000001"

// drainServer is a real server behind the real HTTP API with one ready
// node (no client behind it) running the hostpath plugin, a volume
// "data" and, when busy, a writer holding a claim on it and the plugin's
// allocation: a drain of the node then waits for the claim.
func drainServer(t *testing.T, busy bool) (addr string, s *servertest.TestServer) {
	t.Helper()
	cluster := servertest.Cluster(t, 1, func(c *server.Config) {
		c.HeartbeatTTL = 10 * time.Minute
		c.DrainPluginGrace = time.Second
	})
	s = cluster.Servers[0]
	srv := httptest.NewServer(httpapi.New(s.Server, nil))
	t.Cleanup(srv.Close)
	const secret = "5ec2e7e5-0000-4000-8000-00000000000d"
	rpc := func(method string, args, reply any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		must.NoError(t, s.RPC(ctx, method, args, reply), must.Sprint(method))
	}
	node := statetest.NodeWithPlugin(drainNodeID, "hostpath", false, true, true)
	node.Name, node.AllowRootTasks = "client-1", true
	rpc("Node.Register", &structs.NodeRegisterRequest{Node: node, WriteRequest: structs.WriteRequest{AuthToken: secret}}, &structs.NodeUpdateResponse{})
	if !busy {
		return srv.URL, s
	}
	rpc("CSIVolume.Register", &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{statetest.Volume("data", "hostpath")}},
		&structs.CSIVolumeRegisterResponse{})
	writer := statetest.Job("writer")
	writer.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"data": {Name: "data", Type: "csi", Source: "data",
		AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}}
	plugin := statetest.PluginJob("plugin", "hostpath")
	for _, j := range []*structs.Job{writer, plugin} {
		j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
		var resp structs.JobRegisterResponse
		rpc("Job.Register", &structs.JobRegisterRequest{Job: j}, &resp)
		must.SliceLen(t, 1, resp.Placed, must.Sprintf("job %s: %v", j.ID, resp.Failures))
	}
	return srv.URL, s
}

func TestNodeDrain_UsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"no mode", []string{"node", "drain", "n1"}, "give -enable to drain the node, -disable to cancel its drain, or -monitor"},
		{"both", []string{"node", "drain", "-enable", "-disable", "n1"}, "give -enable or -disable, not both"},
		{"monitor a cancel", []string{"node", "drain", "-disable", "-monitor", "n1"}, "cannot be given with -disable"},
		{"deadline without enable", []string{"node", "drain", "-disable", "-deadline", "5m", "n1"}, "go with -enable"},
		{"yes without enable", []string{"node", "drain", "-monitor", "-yes", "n1"}, "go with -enable"},
		{"zero deadline", []string{"node", "drain", "-enable", "-deadline", "0s", "n1"}, "-deadline must be positive"},
		{"bad deadline", []string{"node", "drain", "-enable", "-deadline", "soon", "n1"}, `invalid value "soon" for flag -deadline`},
		{"no node", []string{"node", "drain", "-enable"}, "this command takes one argument"},
		{"eligibility without mode", []string{"node", "eligibility", "n1"}, "give -enable or -disable, exactly one"},
		{"eligibility both", []string{"node", "eligibility", "-enable", "-disable", "n1"}, "exactly one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, "http://127.0.0.1:1", "", c.args...)
			mustExit(t, r, exitUsage, c.says)
		})
	}
}

// fakeTerminal is a stdin that says it is a terminal.
type fakeTerminal struct{ *strings.Reader }

func (fakeTerminal) IsTerminal() bool { return true }

func runWithStdin(t *testing.T, addr string, stdin any, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	app := &App{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		if k == "BERTH_ADDR" {
			return addr
		}
		return ""
	}}
	if r, ok := stdin.(fakeTerminal); ok {
		app.Stdin = r
	}
	code := app.Run(context.Background(), args)
	return result{code, out.String(), errb.String()}
}

// TestNodeDrain_Confirmation: -enable asks on a terminal and drains only
// on yes; without a terminal it needs -yes.
func TestNodeDrain_Confirmation(t *testing.T) {
	addr, s := drainServer(t, false)
	draining := func() bool {
		n, err := s.State().NodeByID(nil, drainNodeID)
		must.NoError(t, err)
		return n.Draining() || n.SchedulingEligibility == structs.NodeSchedulingIneligible
	}

	r := runCLI(t, addr, "y\n", "node", "drain", "-enable", "d7a1")
	mustExit(t, r, exitError, "stdin is not a terminal to ask for confirmation, so give -yes")
	must.False(t, draining())

	r = runWithStdin(t, addr, fakeTerminal{strings.NewReader("n\n")}, "node", "drain", "-enable", "d7a1")
	mustExit(t, r, exitOK, "")
	must.StrContains(t, r.stdout, `Drain node "`+drainNodeID+`" (client-1)? Its allocations will be stopped and placed elsewhere. [y/N] `)
	must.StrContains(t, r.stdout, "Drain not started\n")
	must.False(t, draining())

	r = runWithStdin(t, addr, fakeTerminal{strings.NewReader("")}, "node", "drain", "-enable", "d7a1")
	mustExit(t, r, exitError, "no answer on stdin; give -yes")
	must.False(t, draining())

	r = runWithStdin(t, addr, fakeTerminal{strings.NewReader("yes\n")}, "node", "drain", "-enable", "-deadline", "10m", "d7a1")
	mustExit(t, r, exitOK, "")
	must.StrContains(t, r.stdout, `Node "`+drainNodeID+`" (client-1) drain started: deadline 10m0s`)
	must.True(t, draining())
}

// TestNodeDrain_RealServer: eligibility both ways, a drain that waits for
// a claim refuses eligibility and is cancelled, and a drain followed with
// -monitor that reaches its deadline and completes, every step printed.
func TestNodeDrain_RealServer(t *testing.T) {
	addr, _ := drainServer(t, true)
	cli := func(args ...string) result { return runCLI(t, addr, "", args...) }

	r := cli("node", "eligibility", "-disable", "d7a1")
	mustExit(t, r, exitOK, "")
	must.EqOp(t, `Node "`+drainNodeID+`" scheduling eligibility set: ineligible for scheduling`+"\n", r.stdout)
	r = cli("node", "status", "d7a1")
	mustExit(t, r, exitOK, "")
	must.StrContains(t, r.stdout, "Eligibility = ineligible\n")
	must.StrContains(t, r.stdout, "Drain       = false\n")
	mustExit(t, cli("node", "eligibility", "-enable", "d7a1"), exitOK, "")
	mustExit(t, cli("node", "eligibility", "-enable", "nope"), exitError, `node "nope" not found`)

	// The writer's claim is never released (no client): the drain waits.
	r = cli("node", "drain", "-enable", "-yes", "d7a1")
	mustExit(t, r, exitOK, "")
	must.StrContains(t, r.stdout, "drain started: deadline 1h0m0s\n")
	r = cli("node", "status", "d7a1")
	must.StrContains(t, r.stdout, "Drain       = true, started ")
	mustExit(t, cli("node", "eligibility", "-enable", "d7a1"), exitError, "is draining and cannot be made eligible; cancel the drain first")
	r = cli("node", "drain", "-disable", "d7a1")
	mustExit(t, r, exitOK, "")
	must.StrContains(t, r.stdout, "drain cancelled; it stays ineligible until \"berth node eligibility -enable d7a1e000\"")
	r = cli("node", "drain", "-disable", "d7a1")
	mustExit(t, r, exitOK, "")
	must.StrContains(t, r.stdout, "is not draining")

	// A short deadline: the plugin, held back by the claim, waits the
	// grace past the deadline for it, then is stopped and the drain
	// completes.
	r = cli("node", "drain", "-enable", "-yes", "-deadline", "1s", "-monitor", "d7a1")
	mustExit(t, r, exitOK, "")
	steps := []string{"drain started: deadline 1s",
		"the grace past the deadline is over: stopping 1 allocation of CSI plugins with 1 volume claim not released",
		"drain complete: no allocation left to stop"}
	last := -1
	lines := strings.Split(r.stdout, "\n")
	for _, step := range steps {
		i := lineWith(lines, step)
		must.Greater(t, last, i, must.Sprintf("step %q in order in:\n%s", step, r.stdout))
		last = i
	}
	must.StrHasSuffix(t, `Node "`+drainNodeID+"\" drain complete\n", r.stdout)
	must.True(t, regexp.MustCompile(`(?m)^\S+: drain started`).MatchString(r.stdout), must.Sprint("each event with its time"))
	must.StrNotContains(t, r.stdout, "drain cancelled", must.Sprint("the earlier drain's events are not this one's"))

	r = cli("node", "drain", "-monitor", "d7a1")
	mustExit(t, r, exitOK, "")
	must.StrContains(t, r.stdout, "is not draining")
}

func lineWith(lines []string, s string) int {
	for i, l := range lines {
		if strings.Contains(l, s) {
			return i
		}
	}
	return -1
}

// TestStdinIsTerminal: /dev/null, a file and a pipe's reader are not
// terminals to ask on.
func TestStdinIsTerminal(t *testing.T) {
	devNull, err := os.Open(os.DevNull)
	must.NoError(t, err)
	t.Cleanup(func() { _ = devNull.Close() })
	must.False(t, stdinIsTerminal(devNull), must.Sprint("/dev/null is a character device, not a terminal"))
	path := filepath.Join(t.TempDir(), "answers")
	must.NoError(t, os.WriteFile(path, []byte("y\n"), 0o600))
	f, err := os.Open(path)
	must.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	must.False(t, stdinIsTerminal(f))
	must.False(t, stdinIsTerminal(strings.NewReader("y\n")))
	must.True(t, stdinIsTerminal(fakeTerminal{strings.NewReader("")}))
}
