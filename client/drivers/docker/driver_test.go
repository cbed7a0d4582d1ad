package docker_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/drivers/docker"
	"github.com/berth-csi/berth/client/drivers/docker/dockertest"
)

func TestNew_BadEndpoint(t *testing.T) {
	_, err := docker.New(docker.Config{Endpoint: "not an endpoint"}, nil)
	must.ErrorIs(t, err, docker.ErrInvalidConfig)
	must.StrContains(t, err.Error(), "not an endpoint")
}

func TestDriver_Fingerprint(t *testing.T) {
	t.Run("unreachable", func(t *testing.T) {
		d := newDriver(t, docker.Config{Endpoint: "unix://" + filepath.Join(t.TempDir(), "no-docker.sock")})
		h := d.Fingerprint(t.Context())
		must.False(t, h.Healthy)
		must.StrContains(t, h.Err, "does not answer")
		must.StrContains(t, h.Err, "no-docker.sock")
	})
	t.Run("engine", func(t *testing.T) {
		dockertest.Client(t)
		h := newDriver(t, docker.DefaultConfig()).Fingerprint(t.Context())
		must.True(t, h.Healthy, must.Sprint(h.Err))
		must.Eq(t, "", h.Err)
		must.NotEq(t, "", h.Version)
		must.NotEq(t, "", h.APIVersion)
	})
}

func TestDriver_Start_RunsAndLogs(t *testing.T) {
	e := newEngine(t)
	d := newDriver(t, docker.DefaultConfig())
	cfg := taskConfig(t, e.image, "print:hello", "stderr:oops", "print:${GREETING}-${NOPE}", "env:BERTH_TASK_DIR",
		"env:BERTH_ALLOC_DIR", "env:BERTH_ALLOC_ID", "env:BERTH_NODE_NAME", "write:/berth/local/db.txt:row1",
		"touch:/berth/local/ready", "waitfile:/berth/alloc/data/go")
	cfg.Env = map[string]string{"GREETING": "hi", "BERTH_ALLOC_ID": "spoofed"}
	cfg.Extra = map[string]string{"BERTH_NODE_NAME": "node-1"}
	cfg.Labels = map[string]string{"team": "storage"}
	h := start(t, d, cfg)
	must.Eq(t, docker.HandleState{TaskName: "db", ContainerID: h.ContainerID()}, h.State())

	waitFile(t, filepath.Join(cfg.TaskDir, "ready"))
	o, ok := owned(t, d, h.ContainerID())
	must.True(t, ok, must.Sprint("a running task's container is listed"))
	must.True(t, o.Running)
	must.Eq(t, cfg.AllocID, o.AllocID)
	must.Eq(t, "db", o.TaskName)
	for k, v := range map[string]string{docker.LabelAllocID: cfg.AllocID, docker.LabelJobID: "shop",
		docker.LabelNamespace: "default", docker.LabelGroup: "data", docker.LabelTask: "db", "team": "storage"} {
		must.Eq(t, v, o.Labels[k], must.Sprintf("label %s", k))
	}
	select {
	case <-h.Done():
		t.Fatal("Done closed while the container runs")
	default:
	}

	touch(t, filepath.Join(cfg.AllocDir, "data", "go"))
	res := waitDone(t, h)
	must.Eq(t, docker.ExitResult{}, res)
	must.True(t, res.Successful())
	must.Eq(t, "exit code 0", res.String())
	must.NoError(t, h.CleanupError())

	must.Eq(t, strings.Join([]string{"hello", "hi-${NOPE}", "BERTH_TASK_DIR=/berth/local", "BERTH_ALLOC_DIR=/berth/alloc",
		"BERTH_ALLOC_ID=" + cfg.AllocID, "BERTH_NODE_NAME=node-1", "read /berth/local/db.txt: row1", ""}, "\n"),
		readFile(t, cfg.StdoutPath))
	must.Eq(t, "oops\n", readFile(t, cfg.StderrPath))
	must.Eq(t, "row1\n", readFile(t, filepath.Join(cfg.TaskDir, "db.txt")), must.Sprint("the task dir is bound read-write"))
	_, ok = owned(t, d, h.ContainerID())
	must.False(t, ok, must.Sprint("the exited container is removed"))

	// A restart under the same name appends to the same logs.
	cfg.Args = []string{"print:again"}
	must.True(t, waitDone(t, start(t, d, cfg)).Successful())
	out := readFile(t, cfg.StdoutPath)
	must.StrHasPrefix(t, "hello\n", out)
	must.StrHasSuffix(t, "row1\nagain\n", out)
}

func TestDriver_Start_ExitCode(t *testing.T) {
	e := newEngine(t)
	d := newDriver(t, docker.DefaultConfig())
	res := waitDone(t, start(t, d, taskConfig(t, e.image, "print:failing", "exit:3")))
	must.Eq(t, docker.ExitResult{ExitCode: 3}, res)
	must.False(t, res.Successful())
	must.Eq(t, "exit code 3", res.String())
}

func TestHandle_Stop(t *testing.T) {
	e := newEngine(t)
	d := newDriver(t, docker.DefaultConfig())

	t.Run("trapped SIGTERM exits cleanly", func(t *testing.T) {
		cfg := taskConfig(t, e.image, "trap", "touch:/berth/local/ready", "block")
		h := start(t, d, cfg)
		waitFile(t, filepath.Join(cfg.TaskDir, "ready"))
		stop(t, h, syscall.SIGTERM, time.Hour)
		res := h.Result()
		must.Eq(t, docker.ExitResult{}, res, must.Sprint(res.String()))
		must.Eq(t, "got SIGTERM\n", readFile(t, cfg.StdoutPath))
		must.NoError(t, h.Stop(t.Context(), syscall.SIGTERM, 0), must.Sprint("stopping a stopped task is no error"))
	})
	t.Run("ignored SIGTERM is followed by SIGKILL", func(t *testing.T) {
		cfg := taskConfig(t, e.image, "ignore", "touch:/berth/local/ready", "block")
		h := start(t, d, cfg)
		waitFile(t, filepath.Join(cfg.TaskDir, "ready"))
		stop(t, h, syscall.SIGTERM, 0)
		res := h.Result()
		must.Eq(t, docker.ExitResult{ExitCode: 137, Signal: int(syscall.SIGKILL)}, res)
		must.Eq(t, "killed by signal killed", res.String())
		must.False(t, res.Successful())
	})
	t.Run("killNow cuts the timeout short", func(t *testing.T) {
		cfg := taskConfig(t, e.image, "ignore", "touch:/berth/local/ready", "block")
		h := start(t, d, cfg)
		waitFile(t, filepath.Join(cfg.TaskDir, "ready"))
		killNow := make(chan struct{})
		close(killNow)
		must.NoError(t, h.StopSooner(t.Context(), syscall.SIGTERM, time.Hour, killNow))
		must.Eq(t, int(syscall.SIGKILL), h.Result().Signal)
	})
}

func TestDriver_Start_BindMount(t *testing.T) {
	e := newEngine(t)
	d := newDriver(t, docker.DefaultConfig())
	vol := t.TempDir()

	cfg := taskConfig(t, e.image, "write:/berth/local/data/db.txt:row1")
	cfg.Mounts = []docker.Mount{{Source: vol, Destination: "data"}}
	must.Eq(t, docker.ExitResult{}, waitDone(t, start(t, d, cfg)))
	must.StrContains(t, readFile(t, cfg.StdoutPath), "read /berth/local/data/db.txt: row1\n")
	must.Eq(t, "row1\n", readFile(t, filepath.Join(vol, "db.txt")))

	cfg = taskConfig(t, e.image, "write:/data/db.txt:row2")
	cfg.Mounts = []docker.Mount{{Source: vol, Destination: "/data", ReadOnly: true}}
	must.Eq(t, docker.ExitResult{ExitCode: 4}, waitDone(t, start(t, d, cfg)))
	must.StrContains(t, readFile(t, cfg.StderrPath), "read-only file system")
	must.Eq(t, "row1\n", readFile(t, filepath.Join(vol, "db.txt")), must.Sprint("a read-only volume is not written"))
}

func TestDriver_Start_Refused(t *testing.T) {
	t.Run("privileged", func(t *testing.T) {
		d := newDriver(t, docker.DefaultConfig())
		cfg := taskConfig(t, "berth-test/any:1")
		cfg.Privileged = true
		_, err := d.Start(t.Context(), cfg)
		must.ErrorIs(t, err, docker.ErrPrivilegedNotAllowed)
		must.StrContains(t, err.Error(), `task "db"`)
		must.StrContains(t, err.Error(), `driver "docker" { allow_privileged = true }`)
	})
	t.Run("berth's labels", func(t *testing.T) {
		d := newDriver(t, docker.DefaultConfig())
		cfg := taskConfig(t, "berth-test/any:1")
		cfg.Labels = map[string]string{docker.LabelAllocID: "other"}
		_, err := d.Start(t.Context(), cfg)
		must.ErrorIs(t, err, docker.ErrInvalidTask)
		must.StrContains(t, err.Error(), docker.LabelAllocID)
	})
	t.Run("missing image", func(t *testing.T) {
		dockertest.Client(t)
		d := newDriver(t, docker.DefaultConfig())
		img := dockertest.RepoPrefix + "missing:" + dockertest.Unique()
		_, err := d.Start(t.Context(), taskConfig(t, img))
		must.ErrorIs(t, err, docker.ErrImageMissing)
		must.StrContains(t, err.Error(), "image "+img+" is not present on node node-1; build or pull it")
	})
	t.Run("failed pull", func(t *testing.T) {
		dockertest.Client(t)
		d := newDriver(t, docker.DefaultConfig())
		cfg := taskConfig(t, "127.0.0.1:1/berth-test/none:"+dockertest.Unique())
		cfg.ForcePull = true
		_, err := d.Start(t.Context(), cfg)
		must.Error(t, err)
		must.StrContains(t, err.Error(), "pull image 127.0.0.1:1/berth-test/none")
	})
	t.Run("missing command", func(t *testing.T) {
		e := newEngine(t)
		d := newDriver(t, docker.DefaultConfig())
		cfg := taskConfig(t, e.image)
		cfg.Entrypoint = []string{"/no/such/program"}
		_, err := d.Start(t.Context(), cfg)
		must.Error(t, err)
		must.StrContains(t, err.Error(), "start container berth-db-"+cfg.AllocID)
		must.StrContains(t, err.Error(), "/no/such/program")
		list, lerr := d.Owned(t.Context())
		must.NoError(t, lerr)
		for _, o := range list {
			must.NotEq(t, cfg.AllocID, o.AllocID, must.Sprint("a container that failed to start is removed"))
		}
	})
}

func TestDriver_Privileged_Allowed(t *testing.T) {
	e := newEngine(t)
	d := newDriver(t, docker.Config{AllowPrivileged: true})
	cfg := taskConfig(t, e.image, "print:ok")
	cfg.Privileged = true
	h, err := d.Start(t.Context(), cfg)
	if err != nil {
		// Berth let it through; an engine inside a sandbox may still be
		// unable to grant every capability.
		must.False(t, errors.Is(err, docker.ErrPrivilegedNotAllowed))
		must.StrContains(t, err.Error(), "start container")
		t.Skipf("the engine cannot run privileged containers here: %v", err)
	}
	t.Cleanup(func() { removeContainer(t, d, h.ContainerID()) })
	must.Eq(t, docker.ExitResult{}, waitDone(t, h))
}

// TestDriver_Caps: cap_drop and cap_add reach the engine: a container
// that drops every capability and adds sys_admin has that one alone.
func TestDriver_Caps(t *testing.T) {
	e := newEngine(t)
	d := newDriver(t, docker.Config{AllowCaps: []string{"sys_admin"}})
	cfg := taskConfig(t, e.image, "caps")
	cfg.CapDrop, cfg.CapAdd = []string{"all"}, []string{"sys_admin"}
	h := start(t, d, cfg)
	t.Cleanup(func() { removeContainer(t, d, h.ContainerID()) })
	must.Eq(t, docker.ExitResult{}, waitDone(t, h))
	must.Eq(t, "CapEff: 0000000000200000\n", readFile(t, cfg.StdoutPath), must.Sprint("CAP_SYS_ADMIN is bit 21"))

	cfg = taskConfig(t, e.image, "caps")
	cfg.CapAdd = []string{"sys_admin", "net_admin"}
	_, err := d.Start(t.Context(), cfg)
	must.ErrorIs(t, err, docker.ErrCapsNotAllowed)
	must.StrContains(t, err.Error(), "adds capabilities net_admin")
}

// TestDriver_Defaults: a container gets the engine's bridge, not the
// host's network, and no NET_RAW, unless the task asks and the client
// allows it.
func TestDriver_Defaults(t *testing.T) {
	e := newEngine(t)
	d := newDriver(t, docker.Config{AllowHostNetwork: true, AllowCaps: []string{"net_raw"}})
	cfg := taskConfig(t, e.image, "ifaces", "caps")
	must.Eq(t, docker.ExitResult{}, waitDone(t, start(t, d, cfg)))
	out := readFile(t, cfg.StdoutPath)
	must.StrContains(t, out, "ifaces: eth0 lo\n", must.Sprint("a bridge network's interfaces"))
	must.StrContains(t, out, "CapEff: 00000000a80405fb\n", must.Sprint("Docker's default set less NET_RAW (bit 13)"))

	cfg = taskConfig(t, e.image, "ifaces", "caps")
	cfg.NetworkMode, cfg.CapAdd = docker.NetworkHost, []string{"net_raw"}
	must.Eq(t, docker.ExitResult{}, waitDone(t, start(t, d, cfg)))
	out = readFile(t, cfg.StdoutPath)
	must.StrNotContains(t, out, "ifaces: eth0 lo\n", must.Sprint("the host's interfaces"))
	must.StrContains(t, out, "CapEff: 00000000a80425fb\n", must.Sprint("NET_RAW added back"))
}

// TestDriver_Resources: the engine enforces a container's limits: one
// that takes 200 MiB under a 64 MiB limit is killed for it, and says so;
// its CPU shares and cores are the ones asked.
func TestDriver_Resources(t *testing.T) {
	e := newEngine(t)
	d := newDriver(t, docker.DefaultConfig())
	cfg := taskConfig(t, e.image, "print:started", "touch:/berth/local/ready", "waitfile:/berth/alloc/data/go", "alloc:200", "print:survived")
	cfg.Resources = docker.Resources{CPUShares: 700, Cpuset: "0", MemoryBytes: 64 << 20}
	h := start(t, d, cfg)
	waitFile(t, filepath.Join(cfg.TaskDir, "ready"))
	inspect, err := e.cli.ContainerInspect(t.Context(), h.ContainerID())
	must.NoError(t, err)
	must.EqOp(t, int64(700), inspect.HostConfig.CPUShares)
	must.EqOp(t, "0", inspect.HostConfig.CpusetCpus)
	must.EqOp(t, int64(64<<20), inspect.HostConfig.Memory)
	touch(t, filepath.Join(cfg.AllocDir, "data", "go"))
	res := waitDone(t, h)
	must.True(t, res.OOMKilled, must.Sprintf("%+v", res))
	must.StrContains(t, res.String(), "out of memory")
	must.EqOp(t, "started\n", readFile(t, cfg.StdoutPath))
}

// TestDriver_Start_RootRefused: where root is not allowed, a container
// that would run as root is refused, whoever says root: its image (no
// USER, or a USER its passwd file makes uid 0) or the task's user; the
// refusal says which, and leaves no container. One that runs as another
// user starts.
func TestDriver_Start_RootRefused(t *testing.T) {
	e := newEngine(t)
	d := newDriver(t, docker.DefaultConfig())
	bin := dockertest.StaticBinary(t, "./testdata/berthdb")
	toor := dockertest.ImageAs(t, e.cli, "berthdb-toor", bin, "toor", "toor:x:0:0:root by another name:/:/berthdb\n")
	app := dockertest.ImageAs(t, e.cli, "berthdb-app", bin, "app", "app:x:1000:1000:an app:/:/berthdb\n")
	refused := []struct {
		name, image, user, who string
	}{
		{"image with no user", e.image, "", "its image names no user, so root"},
		{"user root", e.image, "root", `user = "root"`},
		{"uid 0 with a group", app, "0:1000", `user = "0:1000"`},
		{"image user that is uid 0", toor, "", `its image's user, "toor", which is uid 0 in the image`},
		{"task user that is uid 0", toor, "toor", `user = "toor", which is uid 0 in the image`},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			cfg := taskConfig(t, tc.image, "print:ran")
			cfg.User, cfg.AllowRoot = tc.user, false
			_, err := d.Start(t.Context(), cfg)
			must.ErrorIs(t, err, docker.ErrRootNotAllowed)
			must.StrContains(t, err.Error(), `task "db" would run as root in its container (`+tc.who+`); node "node-1" does not allow root tasks`)
			must.StrContains(t, err.Error(), "allow_root_tasks = true")
			_, left := ownedByAlloc(t, d, cfg.AllocID)
			must.False(t, left, must.Sprint("no container is left"))
		})
	}
	for _, tc := range []struct {
		name, image, user string
		uid               uint32
	}{
		{"numeric user", e.image, "65534:65534", 65534},
		{"image user that is not root", app, "", 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := taskConfig(t, tc.image, "write:/berth/local/mine:ran", "write:/berth/alloc/data/shared:too")
			cfg.User, cfg.AllowRoot = tc.user, false
			must.Eq(t, docker.ExitResult{}, waitDone(t, start(t, d, cfg)), must.Sprint(readFile(t, cfg.StderrPath)))
			must.Eq(t, "read /berth/local/mine: ran\nread /berth/alloc/data/shared: too\n", readFile(t, cfg.StdoutPath),
				must.Sprint("a container's user writes its task dir and the shared data/"))
			fi, err := os.Stat(cfg.TaskDir)
			must.NoError(t, err)
			must.EqOp(t, tc.uid, fi.Sys().(*syscall.Stat_t).Uid)
		})
	}
}

func TestDriver_Start_Leftover(t *testing.T) {
	e := newEngine(t)
	cfg := taskConfig(t, e.image, "touch:/berth/local/ready", "block")

	// A client that stopped watching (it crashed) left the task running.
	d1, err := docker.New(docker.DefaultConfig(), nil)
	must.NoError(t, err)
	old, err := d1.Start(t.Context(), cfg)
	must.NoError(t, err)
	t.Cleanup(func() { removeContainer(t, d1, old.ContainerID()) })
	waitFile(t, filepath.Join(cfg.TaskDir, "ready"))
	must.NoError(t, d1.Close())

	d := newDriver(t, docker.DefaultConfig())
	must.NoError(t, os.Remove(filepath.Join(cfg.TaskDir, "ready")))
	h := start(t, d, cfg)
	must.NotEq(t, old.ContainerID(), h.ContainerID())
	_, ok := owned(t, d, old.ContainerID())
	must.False(t, ok, must.Sprint("the leftover is removed"))
	waitFile(t, filepath.Join(cfg.TaskDir, "ready"))
	stop(t, h, syscall.SIGKILL, 0)

	// A container that is not the task's keeps its name.
	foreign := taskConfig(t, e.image)
	name := "berth-db-" + foreign.AllocID
	c, err := e.cli.ContainerCreate(t.Context(), &container.Config{Image: e.image}, nil, nil, nil, name)
	must.NoError(t, err)
	t.Cleanup(func() { removeContainer(t, d, c.ID) })
	_, err = d.Start(t.Context(), foreign)
	must.ErrorIs(t, err, docker.ErrInvalidTask)
	must.StrContains(t, err.Error(), "container name "+name+" is taken")
}

func TestDriver_Reattach(t *testing.T) {
	e := newEngine(t)
	cfg := taskConfig(t, e.image, "print:first", "touch:/berth/local/ready",
		"waitfile:/berth/local/go1", "print:between", "stderr:warn", "touch:/berth/local/printed",
		"waitfile:/berth/local/go2", "print:second", "exit:5")
	local := func(name string) string { return filepath.Join(cfg.TaskDir, name) }

	d1, err := docker.New(docker.DefaultConfig(), nil)
	must.NoError(t, err)
	h1, err := d1.Start(t.Context(), cfg)
	must.NoError(t, err)
	t.Cleanup(func() { removeContainer(t, d1, h1.ContainerID()) })
	waitFile(t, local("ready"))
	waitLog(t, cfg.StdoutPath, "first\n")
	must.NoError(t, d1.Close()) // the client goes away; the task runs on

	// What the task logs while no client watches is copied after the
	// reattach, and nothing is copied twice.
	touch(t, local("go1"))
	waitFile(t, local("printed"))

	d2 := newDriver(t, docker.DefaultConfig())
	h2, err := d2.Reattach(t.Context(), h1.State())
	must.NoError(t, err)
	must.Eq(t, h1.State(), h2.State())
	waitLog(t, cfg.StdoutPath, "between\n")
	touch(t, local("go2"))
	must.Eq(t, docker.ExitResult{ExitCode: 5}, waitDone(t, h2))
	must.Eq(t, "first\nbetween\nsecond\n", readFile(t, cfg.StdoutPath))
	must.Eq(t, "warn\n", readFile(t, cfg.StderrPath))
	_, ok := owned(t, d2, h1.ContainerID())
	must.False(t, ok, must.Sprint("the exited container is removed"))
	select {
	case <-h1.Done():
		t.Fatal("the closed driver's handle closed Done")
	default:
	}
}

func TestDriver_Reattach_Gone(t *testing.T) {
	e := newEngine(t)
	cfg := taskConfig(t, e.image, "touch:/berth/local/ready", "waitfile:/berth/local/go", "exit:2")

	d1, err := docker.New(docker.DefaultConfig(), nil)
	must.NoError(t, err)
	h1, err := d1.Start(t.Context(), cfg)
	must.NoError(t, err)
	waitFile(t, filepath.Join(cfg.TaskDir, "ready"))
	must.NoError(t, d1.Close())
	touch(t, filepath.Join(cfg.TaskDir, "go")) // it exits while no client watches

	d := newDriver(t, docker.DefaultConfig())
	t.Cleanup(func() { removeContainer(t, d, h1.ContainerID()) })
	waitFor(t, "the container's exit", func() bool {
		o, ok := owned(t, d, h1.ContainerID())
		return ok && !o.Running
	})
	_, err = d.Reattach(t.Context(), h1.State())
	must.ErrorIs(t, err, docker.ErrGone)
	must.StrContains(t, err.Error(), "exit code 2")

	must.NoError(t, d.Remove(t.Context(), h1.ContainerID()))
	must.NoError(t, d.Remove(t.Context(), h1.ContainerID()), must.Sprint("Remove is idempotent"))
	_, ok := owned(t, d, h1.ContainerID())
	must.False(t, ok)
	_, err = d.Reattach(t.Context(), h1.State())
	must.ErrorIs(t, err, docker.ErrGone)
	_, err = d.Reattach(t.Context(), docker.HandleState{TaskName: "db"})
	must.ErrorIs(t, err, docker.ErrGone)
}

func TestDriver_Closed(t *testing.T) {
	d, err := docker.New(docker.DefaultConfig(), nil)
	must.NoError(t, err)
	must.NoError(t, d.Close())
	_, err = d.Start(t.Context(), taskConfig(t, "berth-test/any:1"))
	must.ErrorIs(t, err, docker.ErrClosed)
}
