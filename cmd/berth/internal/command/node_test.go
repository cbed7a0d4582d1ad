package command

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// TestNodeInfo_Drivers: node status shows each task driver's health, and
// says so of a client that reports none.
func TestNodeInfo_Drivers(t *testing.T) {
	var out bytes.Buffer
	m := &meta{stdout: &out}
	m.nodeInfo(&structs.Node{ID: "n1", Name: "client-1", Status: structs.NodeStatusReady, Drivers: map[string]*structs.DriverInfo{
		structs.DriverExec:   {Detected: true, Healthy: true, HealthDescription: "healthy"},
		structs.DriverDocker: {Detected: true, HealthDescription: "Cannot connect to the Docker daemon", AllowPrivileged: true, AllowHostNetwork: true},
		"podman":             {},
	}}, false)
	lines := strings.Split(out.String(), "\n")
	i := indexOf(lines, "Drivers")
	must.Positive(t, i, must.Sprint(out.String()))
	must.StrHasPrefix(t, "Driver  Detected  Health      Privileged  Host Network  Updated  Description", lines[i+1])
	must.StrHasPrefix(t, "docker  yes       unhealthy   yes         yes           <none>   Cannot connect to the Docker daemon", lines[i+2])
	must.StrHasPrefix(t, "exec    yes       healthy     no          no            <none>   healthy", lines[i+3])
	must.StrHasPrefix(t, "podman  no        undetected  no          no            <none>", lines[i+4])

	out.Reset()
	m.nodeInfo(&structs.Node{ID: "n2", Name: "client-2", Status: structs.NodeStatusReady}, false)
	must.StrContains(t, out.String(), "\nDrivers\nNone reported (the client runs exec only)\n")
}

func indexOf(lines []string, s string) int {
	for i, l := range lines {
		if l == s {
			return i
		}
	}
	return -1
}
