package structs

import (
	"fmt"
	"slices"
	"strings"
)

// CapAll in cap_add, cap_drop or allow_caps stands for every capability.
const CapAll = "all"

// LinuxCapabilities are the capability names cap_add, cap_drop and
// allow_caps take: the kernel's CAP_ names, lower-case and without the
// prefix, as Nomad's docker driver writes them (capabilities(7)).
var LinuxCapabilities = []string{
	"chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid",
	"setpcap", "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw",
	"ipc_lock", "ipc_owner", "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct",
	"sys_admin", "sys_boot", "sys_nice", "sys_resource", "sys_time", "sys_tty_config", "mknod",
	"lease", "audit_write", "audit_control", "setfcap", "mac_override", "mac_admin", "syslog",
	"wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf", "checkpoint_restore",
}

// DockerDefaultAllowCaps is allow_caps when the agent config leaves it
// out: the capabilities Docker gives a container by default, so cap_drop
// and re-adding what was dropped work, and anything more is the
// operator's choice (Nomad's default too).
var DockerDefaultAllowCaps = []string{
	"audit_write", "chown", "dac_override", "fowner", "fsetid", "kill", "mknod",
	"net_bind_service", "setfcap", "setgid", "setpcap", "setuid", "sys_chroot",
}

// NormalizeCapability turns a capability as people write it ("SYS_ADMIN",
// "CAP_SYS_ADMIN", "sys_admin", "ALL") into the form berth stores
// ("sys_admin", "all"); ok is false for a name that is no capability.
func NormalizeCapability(name string) (string, bool) {
	c := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(name)), "cap_")
	return c, c == CapAll || slices.Contains(LinuxCapabilities, c)
}

// NormalizeCapabilities normalizes a list of capabilities (see
// NormalizeCapability), in order and without repeats. Its error names
// every entry that is no capability, as key[i], with the name most likely
// meant.
func NormalizeCapabilities(key string, names []string) ([]string, error) {
	var p problems
	out := make([]string, 0, len(names))
	for i, n := range names {
		c, ok := NormalizeCapability(n)
		if !ok {
			p.add("%s[%d] %s is not a Linux capability%s", key, i, QuoteName(n),
				didYouMean(c, append([]string{CapAll}, LinuxCapabilities...)))
			continue
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if len(p.list) > 0 {
		return nil, NewError(CodeBadRequest, "%s", p.String())
	}
	return out, nil
}

// CapsNotAllowed lists the capabilities of caps (normalized) that allowed
// (a client's allow_caps, normalized) does not hold; "all" in allowed
// holds every one.
func CapsNotAllowed(caps, allowed []string) []string {
	if slices.Contains(allowed, CapAll) {
		return nil
	}
	var out []string
	for _, c := range caps {
		if !slices.Contains(allowed, c) {
			out = append(out, c)
		}
	}
	return out
}

// CapsTaskRefusal says why a task whose cap_add holds capabilities (caps)
// the node's client does not allow cannot run there: the scheduler's
// placement failure and the client's own refusal.
func CapsTaskRefusal(task, driver, node string, caps []string) string {
	return fmt.Sprintf("task %s adds capabilities %s; node %s does not allow them for %s tasks: "+
		"add them to driver %q { allow_caps = [...] } in its agent config", QuoteName(task), strings.Join(caps, ", "),
		QuoteName(node), driver, driver)
}
