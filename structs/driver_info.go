package structs

import (
	"fmt"
	"slices"
	"time"
)

// DriverInfo is one task driver on one node, as the node's client
// fingerprinted it (Node.Drivers, by driver name).
type DriverInfo struct {
	// Detected: the client runs the driver (docker: not turned off by
	// driver "docker" { enabled = false }).
	Detected bool
	// Healthy: the driver can start tasks now (docker: the engine
	// answers). HealthDescription says why not, or what answered.
	Healthy           bool
	HealthDescription string
	// UpdateTime is when the client last saw the health change.
	UpdateTime time.Time
	// AllowPrivileged: the client runs the driver's privileged tasks
	// (docker's allow_privileged).
	AllowPrivileged bool `json:",omitempty"`
	// AllowCaps are the capabilities the driver's tasks may add (docker's
	// allow_caps, normalized; "all" for any).
	AllowCaps []string `json:",omitempty"`
	// AllowHostNetwork: the client runs the driver's tasks on the host's
	// network (docker's allow_host_network).
	AllowHostNetwork bool `json:",omitempty"`
	// UserNamespaces: the engine remaps a container's root to an
	// unprivileged host user (dockerd --userns-remap), so a container
	// that runs as root needs no allow_root_tasks.
	UserNamespaces bool `json:",omitempty"`
}

// Copy returns a copy.
func (d *DriverInfo) Copy() *DriverInfo {
	if d == nil {
		return nil
	}
	c := *d
	c.AllowCaps = slices.Clone(d.AllowCaps)
	return &c
}

// SameHealth reports whether d and o say the same of the driver, whatever
// their UpdateTime: a re-fingerprint that finds nothing new is not sent.
func (d *DriverInfo) SameHealth(o *DriverInfo) bool {
	if d == nil || o == nil {
		return d == o
	}
	return d.Detected == o.Detected && d.Healthy == o.Healthy &&
		d.HealthDescription == o.HealthDescription && d.AllowPrivileged == o.AllowPrivileged &&
		slices.Equal(d.AllowCaps, o.AllowCaps) && d.AllowHostNetwork == o.AllowHostNetwork &&
		d.UserNamespaces == o.UserNamespaces
}

// DriverUsable reports whether the node can start tasks of the driver: exec
// everywhere (a node that reports no drivers is a client from before
// drivers were reported, which runs exec); any other driver only where it
// is detected and healthy.
func (n *Node) DriverUsable(driver string) bool {
	if driver == DriverExec {
		return true
	}
	d := n.Drivers[driver]
	return d != nil && d.Detected && d.Healthy
}

// PrivilegedTaskRefusal says why a privileged task cannot run on a node
// (named by its name) whose client does not allow the driver's privileged
// tasks: the scheduler's placement failure and the client's own refusal.
func PrivilegedTaskRefusal(task, driver, node string) string {
	return fmt.Sprintf("task %s is privileged; node %s does not allow privileged %s tasks: "+
		"set driver %q { allow_privileged = true } in its agent config", QuoteName(task), QuoteName(node), driver, driver)
}

// HostNetworkTaskRefusal says why a task that asks for the host's
// network cannot run on a node whose client does not allow it: the
// scheduler's placement failure and the client's own refusal.
func HostNetworkTaskRefusal(task, driver, node string) string {
	return fmt.Sprintf("task %s asks for network_mode = %q; node %s does not allow %s tasks on the host's network: "+
		"set driver %q { allow_host_network = true } in its agent config, or leave network_mode out (bridge)",
		QuoteName(task), DockerNetworkHost, QuoteName(node), driver, driver)
}

func copyDriverInfoMap(m map[string]*DriverInfo) map[string]*DriverInfo {
	if m == nil {
		return nil
	}
	c := make(map[string]*DriverInfo, len(m))
	for k, v := range m {
		c[k] = v.Copy()
	}
	return c
}
