package csi

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/client/csitest"
)

// pause stops the plugin and waits until every thread of it is stopped.
// SIGSTOP stops a process only once the thread it woke runs: on a loaded
// machine the other threads go on answering calls for a while after
// Pause returns. (csitest.Pause could wait so itself.)
func pause(t *testing.T, p *csitest.Plugin) {
	t.Helper()
	p.Pause()
	pid := p.PID()
	stopped := func() bool {
		stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		for _, f := range stats {
			b, err := os.ReadFile(f)
			if err != nil {
				return false
			}
			// "pid (comm) state ...": comm may hold spaces and parentheses.
			i := strings.LastIndexByte(string(b), ')')
			if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
				return false
			}
		}
		return len(stats) > 0
	}
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(stopped), wait.Timeout(10*time.Second), wait.Gap(time.Millisecond)))
}
