package pluginmanager

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/structs"
)

func monolith(id string, p *csitest.Plugin) *dynamicplugins.PluginInfo {
	return &dynamicplugins.PluginInfo{ID: id, Type: structs.CSIPluginTypeMonolith, Socket: p.Socket,
		ControllerSocket: p.ControllerSocket, Source: dynamicplugins.SourceTask, AllocID: "alloc-1"}
}

func TestNew_Config(t *testing.T) {
	_, err := New(Config{})
	must.ErrorContains(t, err, "registry is required")
	_, err = New(Config{Registry: dynamicplugins.New(nil), ProbeInterval: -1})
	must.ErrorContains(t, err, "probe interval")

	m, err := New(Config{Registry: dynamicplugins.New(nil)})
	must.NoError(t, err)
	must.Eq(t, DefaultProbeInterval, m.cfg.ProbeInterval)
	must.Eq(t, DefaultProbeTimeout, m.cfg.ProbeTimeout)
	must.NotNil(t, m.cfg.Now)
	must.NotNil(t, m.cfg.OnUpdate)
}

func TestManager_Run_MonolithFingerprint(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{Name: "mono.test", ExtraArgs: []string{"-enable-topology"}})
	tm := startManager(t)

	start := time.Now()
	tm.register(t, monolith("mono", p))
	up, _ := tm.rec.wait(t, "healthy", healthy)
	t.Logf("registered -> healthy update after %s", time.Since(start))

	must.Eq(t, "mono", up.PluginID)
	for _, side := range []*structs.CSIInfo{up.Controller, up.Node} {
		must.NotNil(t, side)
		must.Eq(t, "mono", side.PluginID)
		must.Eq(t, "alloc-1", side.AllocID)
		must.True(t, side.Healthy)
		must.Eq(t, healthyDescription, side.HealthDescription)
		must.Eq(t, "mono.test", side.Provider)
		must.Eq(t, csitest.MockVendorVersion, side.ProviderVersion)
		must.True(t, side.RequiresControllerPlugin)
		must.True(t, side.RequiresTopologies)
		must.Eq(t, fixedNow, side.UpdateTime)
	}
	must.Nil(t, up.Controller.NodeInfo)
	must.Nil(t, up.Node.ControllerInfo)
	must.Eq(t, &structs.CSINodeInfo{
		ID:                      "mono.test",
		MaxVolumes:              csitest.MockAttachLimit,
		AccessibleTopology:      &structs.CSITopology{Segments: map[string]string{"io.kubernetes.storage.mock/node": "some-mock-node"}},
		RequiresNodeStageVolume: true,
		SupportsStats:           true,
	}, up.Node.NodeInfo)
	must.NotNil(t, up.Controller.ControllerInfo)
	must.True(t, up.Controller.ControllerInfo.SupportsAttachDetach)
	must.True(t, up.Controller.ControllerInfo.SupportsCreateDelete)

	must.NotNil(t, up.Event)
	must.Eq(t, EventSubsystem, up.Event.Subsystem)
	must.Eq(t, `plugin "mono" became healthy`, up.Event.Message)
	must.Eq(t, map[string]string{"plugin": "mono"}, up.Event.Details)
	must.Eq(t, fixedNow, up.Event.Timestamp)

	// Probes go on, but nothing changes, so nothing is sent.
	tm.rec.none(t, 4*testProbeInterval)

	snap := tm.Plugins()
	must.MapLen(t, 1, snap)
	must.Eq(t, up.Node, snap["mono"].Node)
	must.Eq(t, up.Controller, snap["mono"].Controller)
}

func TestManager_Run_TypeDecidesSides(t *testing.T) {
	cases := []struct {
		name       string
		typ        structs.CSIPluginType
		split      bool
		ctrl, node bool
	}{
		{"node only", structs.CSIPluginTypeNode, false, false, true},
		{"controller only", structs.CSIPluginTypeController, false, true, false},
		{"monolith", structs.CSIPluginTypeMonolith, false, true, true},
		{"monolith, split sockets", structs.CSIPluginTypeMonolith, true, true, true},
		{"controller, split socket", structs.CSIPluginTypeController, true, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := csitest.StartMockDriver(t, csitest.MockOptions{ControllerSocket: tc.split})
			tm := startManager(t)
			info := &dynamicplugins.PluginInfo{ID: "p", Type: tc.typ, Socket: p.Socket, ControllerSocket: p.ControllerSocket}
			if tc.split && tc.typ == structs.CSIPluginTypeController {
				info.Socket = p.ControllerSocket // a controller reached only on its own socket
				info.ControllerSocket = ""
			}
			tm.register(t, info)
			up, _ := tm.rec.wait(t, "healthy", healthy)
			must.Eq(t, tc.ctrl, up.Controller != nil)
			must.Eq(t, tc.node, up.Node != nil)
			if up.Controller != nil {
				must.NotNil(t, up.Controller.ControllerInfo)
				must.Eq(t, "", up.Controller.AllocID)
			}
			if up.Node != nil {
				must.Eq(t, csitest.DefaultMockName, up.Node.NodeInfo.ID)
			}
		})
	}
}

func TestManager_Run_KillThenRestart(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{Name: "crashy.test"})
	tm := startManager(t)
	tm.register(t, monolith("crashy", p))
	tm.rec.wait(t, "healthy", healthy)

	start := time.Now()
	p.Kill()
	up, _ := tm.rec.wait(t, "unhealthy after SIGKILL", unhealthy)
	t.Logf("SIGKILL -> unhealthy update after %s (probe interval %s): %s", time.Since(start), testProbeInterval, describe(up))
	must.NotNil(t, up.Event)
	must.StrHasPrefix(t, `plugin "crashy" became unhealthy: plugin "crashy": `, up.Event.Message)
	must.StrContains(t, up.Node.HealthDescription, `plugin "crashy": GetPluginInfo: Unavailable`)
	// What was learned before the crash is kept; only health changed.
	must.Eq(t, "crashy.test", up.Node.Provider)
	must.NotNil(t, up.Node.NodeInfo)

	start = time.Now()
	p.Restart()
	up, _ = tm.rec.wait(t, "healthy after restart", healthy)
	t.Logf("restart -> healthy update after %s", time.Since(start))
	must.Eq(t, `plugin "crashy" became healthy`, up.Event.Message)
}

func TestManager_Run_Hang(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	tm := startManager(t)
	tm.register(t, monolith("hung", p))
	tm.rec.wait(t, "healthy", healthy)

	start := time.Now()
	p.Pause()
	up, _ := tm.rec.wait(t, "unhealthy after SIGSTOP", unhealthy)
	t.Logf("SIGSTOP -> unhealthy update after %s (probe interval %s, timeout %s)", time.Since(start), testProbeInterval, testProbeTimeout)
	must.StrContains(t, up.Node.HealthDescription, `plugin "hung": `)
	must.StrContains(t, up.Node.HealthDescription, "DeadlineExceeded")
	must.NotNil(t, up.Event)

	start = time.Now()
	p.Resume()
	tm.rec.wait(t, "healthy after SIGCONT", healthy)
	t.Logf("SIGCONT -> healthy update after %s", time.Since(start))
}

func TestManager_Run_Deregister(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	tm := startManager(t)
	tm.register(t, monolith("gone", p))
	tm.rec.wait(t, "healthy", healthy)

	must.NoError(t, tm.reg.Deregister("gone", "alloc-1"))
	up, _ := tm.rec.wait(t, "deregistered", func(u Update) bool { return u.Controller == nil && u.Node == nil })
	must.Eq(t, "gone", up.PluginID)
	must.NotNil(t, up.Event)
	must.Eq(t, `plugin "gone" was deregistered`, up.Event.Message)
	must.MapEmpty(t, tm.Plugins())
	tm.rec.none(t, 3*testProbeInterval) // its instance is gone
}

func TestManager_Run_Replaced(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	tm := startManager(t)
	tm.register(t, monolith("moving", p))
	tm.rec.wait(t, "healthy", healthy)

	next := monolith("moving", p)
	next.AllocID = "alloc-2"
	tm.register(t, next)
	up, _ := tm.rec.wait(t, "the new alloc", func(u Update) bool { return u.Node != nil && u.Node.AllocID == "alloc-2" })
	must.Eq(t, "alloc-2", up.Controller.AllocID)
	must.Nil(t, up.Event) // still healthy: no health event
}

func TestManager_Run_NotCSI(t *testing.T) {
	cases := []struct {
		name   string
		socket func(testing.TB) string
	}{
		{"accepts and closes", csitest.ServeClosingSocket},
		{"http server", csitest.ServeHTTPSocket},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tm := startManager(t)
			tm.register(t, &dynamicplugins.PluginInfo{ID: "impostor", Type: structs.CSIPluginTypeNode, Socket: tc.socket(t)})
			up, _ := tm.rec.wait(t, "unhealthy", unhealthy)
			t.Logf("%s", up.Node.HealthDescription)
			must.StrHasPrefix(t, `plugin "impostor": GetPluginInfo: `, up.Node.HealthDescription)
			must.Eq(t, `plugin "impostor" became unhealthy: `+up.Node.HealthDescription, up.Event.Message)
			must.Eq(t, "", up.Node.Provider)
		})
	}
}

func TestManager_Run_NodeGetInfoFails(t *testing.T) {
	// The mock's nodeGetInfo hook makes NodeGetInfo answer UNAVAILABLE.
	p := csitest.StartMockDriver(t, csitest.MockOptions{Hooks: "nodeGetInfo: |\n  UNAVAILABLE;\n"})
	tm := startManager(t)
	tm.register(t, monolith("half", p))
	up, _ := tm.rec.wait(t, "unhealthy", unhealthy)

	must.False(t, up.Node.Healthy)
	must.Eq(t, `plugin "half": NodeGetInfo: Unavailable: Exec hook NodeGetInfo returned non-OK code`, up.Node.HealthDescription)
	must.Nil(t, up.Node.NodeInfo)
	must.Eq(t, csitest.DefaultMockName, up.Node.Provider) // identity worked
	// The controller side does not depend on NodeGetInfo.
	must.True(t, up.Controller.Healthy)
	must.NotNil(t, up.Controller.ControllerInfo)
	must.Eq(t, `plugin "half" became unhealthy: `+up.Node.HealthDescription, up.Event.Message)
}

func TestManager_Run_SocketAppearsLater(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	p.Stop() // the socket is gone until the plugin starts again
	tm := startManager(t)
	tm.register(t, monolith("late", p))
	up, _ := tm.rec.wait(t, "unhealthy", unhealthy)
	must.StrHasPrefix(t, `plugin "late": dial: `, up.Node.HealthDescription)
	must.StrContains(t, up.Node.HealthDescription, "does not exist")

	tm.rec.none(t, 3*testProbeInterval) // retried, but nothing changed
	start := time.Now()
	p.Restart()
	tm.rec.wait(t, "healthy", healthy)
	t.Logf("plugin started -> healthy update after %s", time.Since(start))
}

func TestManager_Run_StopsPromptly(t *testing.T) {
	hung := csitest.StartMockDriver(t, csitest.MockOptions{})
	ok := csitest.StartMockDriver(t, csitest.MockOptions{})
	tm := startManager(t)
	tm.register(t, monolith("hung", hung))
	tm.register(t, monolith("ok", ok))
	tm.rec.wait(t, "healthy", healthy)
	hung.Pause() // its instance is now blocked in a call

	time.Sleep(testProbeInterval)
	took := tm.stop()
	t.Logf("Run returned %s after its context ended", took)
	must.Less(t, waitBound, took)
}

func TestManager_Run_Twice(t *testing.T) {
	tm := startManager(t)
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(tm.running.Load), wait.Timeout(waitBound), wait.Gap(time.Millisecond)),
		must.Sprint("the first Run never started"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		tm.Run(t.Context()) // refused: already running
	}()
	select {
	case <-done:
	case <-time.After(waitBound):
		t.Fatal("a second Run did not return at once")
	}
}

// A plugin's controller and node instances, registered apart (two tasks
// of one node), are fingerprinted apart and reported as one plugin's two
// sides; one deregistered leaves the other's side.
func TestManager_Run_SplitInstances(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	tm := startManager(t)
	ctrl := monolith("split", p)
	ctrl.Type, ctrl.AllocID = structs.CSIPluginTypeController, "alloc-c"
	node := monolith("split", p)
	node.Type, node.AllocID = structs.CSIPluginTypeNode, "alloc-n"
	tm.register(t, ctrl)
	tm.register(t, node)
	up, _ := tm.rec.wait(t, "both sides", func(u Update) bool {
		return u.Controller != nil && u.Node != nil && u.Controller.Healthy && u.Node.Healthy
	})
	must.Eq(t, "alloc-c", up.Controller.AllocID)
	must.Eq(t, "alloc-n", up.Node.AllocID)

	must.NoError(t, tm.reg.Deregister("split/controller", "alloc-c"))
	up, _ = tm.rec.wait(t, "the node side left", func(u Update) bool { return u.Controller == nil && u.Node != nil })
	must.Eq(t, "alloc-n", up.Node.AllocID)
	must.Eq(t, `plugin "split"'s controller instance was deregistered`, up.Event.Message)
	must.MapContainsKey(t, tm.Plugins(), "split")

	must.NoError(t, tm.reg.Deregister("split/node", "alloc-n"))
	tm.rec.wait(t, "gone", func(u Update) bool { return u.Controller == nil && u.Node == nil })
	must.MapEmpty(t, tm.Plugins())
}
