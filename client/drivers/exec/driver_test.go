package exec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/structs"
)

func TestMain(m *testing.M) {
	Init()
	if len(os.Args) > 1 && os.Args[1] == helperArg {
		os.Exit(runHelper(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// taskConfig lays out an alloc dir in a temp dir and returns a task config
// for sh -c script. As the allocrunner does, it lets the task's user (the
// default, nobody, when the test runs as root) reach the task dir and own
// it.
func taskConfig(t *testing.T, script string) *TaskConfig {
	t.Helper()
	root := t.TempDir()
	taskDir := filepath.Join(root, "web")
	allocDir := filepath.Join(root, "alloc")
	must.NoError(t, os.MkdirAll(filepath.Join(taskDir, "local"), 0o755))
	must.NoError(t, os.MkdirAll(filepath.Join(allocDir, "logs"), 0o755))
	for _, d := range []string{filepath.Dir(root), root} { // t.TempDir makes them 0700
		must.NoError(t, os.Chmod(d, 0o755))
	}
	if os.Geteuid() == 0 {
		nobody, err := ResolveUser("", false)
		must.NoError(t, err)
		for _, d := range []string{taskDir, filepath.Join(taskDir, "local")} {
			must.NoError(t, os.Chown(d, int(nobody.UID), int(nobody.GID)))
		}
	}
	return &TaskConfig{
		AllocID:    "a1",
		TaskName:   "web",
		TaskDir:    taskDir,
		AllocDir:   allocDir,
		StdoutPath: filepath.Join(allocDir, "logs", "web.stdout.0"),
		StderrPath: filepath.Join(allocDir, "logs", "web.stderr.0"),
		Command:    "/bin/sh",
		Args:       []string{"-c", script},
	}
}

func start(t *testing.T, cfg *TaskConfig) *Handle {
	t.Helper()
	h, err := Start(context.Background(), cfg)
	must.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Stop(ctx, syscall.SIGKILL, 0)
	})
	return h
}

func waitDone(t *testing.T, h *Handle) ExitResult {
	t.Helper()
	select {
	case <-h.Done():
		return h.Result()
	case <-time.After(20 * time.Second):
		t.Fatalf("task %d did not exit", h.Pid())
	}
	return ExitResult{}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	must.NoError(t, err)
	return string(b)
}

// waitLog waits until the file holds want.
func waitLog(t *testing.T, path, want string) {
	t.Helper()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), want)
	}), wait.Timeout(15*time.Second), wait.Gap(20*time.Millisecond)), must.Sprintf("%s never held %q", path, want))
}

func TestStart_EnvLogsExitCode(t *testing.T) {
	cfg := taskConfig(t, `echo out; echo err >&2; pwd; env; exit 3`)
	cfg.Env = map[string]string{"GREETING": "hello world", "BERTH_TASK_NAME": "spoofed"}
	h := start(t, cfg)
	res := waitDone(t, h)
	must.Eq(t, ExitResult{ExitCode: 3}, res)
	must.False(t, res.Successful())
	must.Eq(t, "exit code 3", res.String())

	out := readFile(t, cfg.StdoutPath)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must.Eq(t, "out", lines[0])
	must.Eq(t, cfg.TaskDir, lines[1], must.Sprint("the task runs in its task dir"))
	for _, kv := range []string{"GREETING=hello world", "BERTH_ALLOC_ID=a1", "BERTH_TASK_NAME=web",
		"BERTH_TASK_DIR=" + cfg.TaskDir, "BERTH_ALLOC_DIR=" + cfg.AllocDir, "PATH=" + DefaultPath} {
		must.SliceContains(t, lines, kv)
	}
	must.StrNotContains(t, out, "spoofed")
	must.Eq(t, "err\n", readFile(t, cfg.StderrPath))

	// A second start appends to the same logs.
	cfg.Args = []string{"-c", "echo again"}
	waitDone(t, start(t, cfg))
	must.StrHasSuffix(t, "again\n", readFile(t, cfg.StdoutPath))
	must.StrHasPrefix(t, "out\n", readFile(t, cfg.StdoutPath))
}

// TestStart_Interpolation: ${NAME} of the task's environment is replaced
// in the command and args; $NAME and unknown names are left alone.
func TestStart_Interpolation(t *testing.T) {
	cfg := taskConfig(t, "")
	cfg.Command = "printf"
	cfg.Env = map[string]string{"ZONE": "z1"}
	cfg.Extra = map[string]string{"BERTH_NODE_NAME": "n1"}
	cfg.Args = []string{`%s|\n`, "${BERTH_NODE_NAME}/${ZONE}", "${BERTH_TASK_NAME}", "$ZONE ${UNSET} ${ZONE", "$${ZONE}"}
	must.Eq(t, ExitResult{}, waitDone(t, start(t, cfg)))
	must.Eq(t, "n1/z1|\nweb|\n$ZONE ${UNSET} ${ZONE|\n$z1|\n", readFile(t, cfg.StdoutPath))
}

func TestStart_ArgsVerbatim(t *testing.T) {
	cfg := taskConfig(t, "")
	cfg.Command = "printf" // found in the task's PATH
	cfg.Args = []string{`%s|\n`, "two words", `"quoted" $HOME; rm -rf /`, ""}
	must.Eq(t, ExitResult{}, waitDone(t, start(t, cfg)))
	must.Eq(t, "two words|\n\"quoted\" $HOME; rm -rf /|\n|\n", readFile(t, cfg.StdoutPath))
}

func TestStart_Refusals(t *testing.T) {
	cases := []struct {
		name string
		edit func(*TaskConfig)
		want string
	}{
		{"no command", func(c *TaskConfig) { c.Command = "" }, `task "web": config has no command`},
		{"not found", func(c *TaskConfig) { c.Command = "no-such-command" }, `task "web": command "no-such-command" not found in PATH`},
		{"not executable", func(c *TaskConfig) { c.Command = c.StdoutPath; must.NoError(t, os.WriteFile(c.StdoutPath, nil, 0o644)) },
			"is not an executable file"},
		{"relative escape", func(c *TaskConfig) { c.Mounts = []Mount{{Source: "/tmp", Destination: "../../x"}} },
			`destination "../../x" leaves the task dir`},
		{"bidirectional read-only", func(c *TaskConfig) {
			c.Mounts = []Mount{{Source: "/tmp", Destination: "v", ReadOnly: true, Propagation: structs.PropagationBidirectional}}
		}, "bidirectional propagation needs a read-write mount"},
		{"bidirectional /proc", func(c *TaskConfig) {
			c.Mounts = []Mount{{Source: "/proc", Destination: "v", Propagation: structs.PropagationBidirectional}}
		}, "/v: a bidirectional source must not hold /proc"},
		{"unknown propagation", func(c *TaskConfig) { c.Mounts = []Mount{{Source: "/tmp", Destination: "v", Propagation: "rshared"}} },
			`propagation mode "rshared" is not private, host-to-task or bidirectional`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := taskConfig(t, "exit 0")
			tc.edit(cfg)
			_, err := Start(context.Background(), cfg)
			must.ErrorContains(t, err, tc.want)
		})
	}
}

func TestHandle_Stop_SignalThenKill(t *testing.T) {
	t.Run("graceful", func(t *testing.T) {
		cfg := taskConfig(t, `trap 'echo got TERM; exit 0' TERM; echo ready; while :; do sleep 0.05; done`)
		h := start(t, cfg)
		waitLog(t, cfg.StdoutPath, "ready")
		must.NoError(t, h.Stop(context.Background(), syscall.SIGTERM, 10*time.Second))
		must.Eq(t, ExitResult{}, h.Result())
		must.StrContains(t, readFile(t, cfg.StdoutPath), "got TERM")
	})
	t.Run("ignores the signal", func(t *testing.T) {
		// The whole group ignores TERM (a child too): only the kill after
		// the timeout ends it, child included.
		cfg := taskConfig(t, `trap '' TERM; sleep 1000 & echo $! > child.pid; echo ready; wait`)
		h := start(t, cfg)
		waitLog(t, cfg.StdoutPath, "ready")
		child := strconv.Itoa(hostPID(t, h, readPID(t, filepath.Join(cfg.TaskDir, "child.pid"))))
		began := time.Now()
		must.NoError(t, h.Stop(context.Background(), syscall.SIGTERM, 300*time.Millisecond))
		must.Greater(t, 300*time.Millisecond, time.Since(began), must.Sprint("killed only after the timeout"))
		must.Eq(t, ExitResult{ExitCode: -1, Signal: int(syscall.SIGKILL)}, h.Result())
		must.Eq(t, "killed by signal killed", h.Result().String())
		must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
			_, err := os.Stat("/proc/" + child)
			return errors.Is(err, os.ErrNotExist)
		}), wait.Timeout(5*time.Second)), must.Sprint("the task's child is killed with it"))
	})
	t.Run("killed sooner", func(t *testing.T) {
		// A closed killNow ends the wait for the timeout.
		cfg := taskConfig(t, `trap '' TERM; echo ready; while :; do sleep 0.05; done`)
		h := start(t, cfg)
		waitLog(t, cfg.StdoutPath, "ready")
		killNow := make(chan struct{})
		time.AfterFunc(100*time.Millisecond, func() { close(killNow) })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		must.NoError(t, h.StopSooner(ctx, syscall.SIGTERM, time.Hour, killNow), must.Sprint("killed long before the hour"))
		must.Eq(t, ExitResult{ExitCode: -1, Signal: int(syscall.SIGKILL)}, h.Result())
	})
	t.Run("already exited", func(t *testing.T) {
		h := start(t, taskConfig(t, "exit 0"))
		waitDone(t, h)
		must.NoError(t, h.Stop(context.Background(), syscall.SIGTERM, time.Second))
	})
}

func TestReattach(t *testing.T) {
	cfg := taskConfig(t, `echo ready; sleep 1000`)
	h := start(t, cfg)
	waitLog(t, cfg.StdoutPath, "ready")

	r, err := Reattach(h.State())
	must.NoError(t, err)
	must.Eq(t, h.Pid(), r.Pid())
	must.NoError(t, r.Stop(context.Background(), syscall.SIGTERM, 5*time.Second))
	must.ErrorContains(t, r.Result().Err, `task "web" exited; its status is unknown`)
	waitDone(t, h)

	_, err = Reattach(h.State())
	must.ErrorIs(t, err, ErrGone)
	stale := h.State()
	stale.StartTime++
	_, err = Reattach(stale)
	must.ErrorIs(t, err, ErrGone, must.Sprint("a PID with another start time is another process"))
}

func TestStart_NotRoot_RefusesMounts(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: the refusal without root cannot be shown here")
	}
	cfg := taskConfig(t, "exit 0")
	cfg.Mounts = []Mount{{Source: t.TempDir(), Destination: "v"}}
	_, err := Start(context.Background(), cfg)
	must.ErrorIs(t, err, ErrNeedsRoot)
	must.ErrorContains(t, err, `task "web": volume mounts need a mount namespace: exec: berth is not running as root`)
	must.Eq(t, ExitResult{}, waitDone(t, start(t, taskConfig(t, "exit 0"))), must.Sprint("without mounts it runs"))
}
