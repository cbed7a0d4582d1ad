package structs

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultDeniedTaskGroups are the groups whose users a client refuses as
// task users unless its config says otherwise: each is as good as root
// on most hosts (docker's socket, raw disks, the system's logs and
// password hashes, sudo).
var DefaultDeniedTaskGroups = []string{"docker", "disk", "adm", "shadow", "sudo"}

// TaskUserPolicy is who a client's tasks may run as (client { user }),
// besides root, which is allow_root_tasks' to allow. The node reports it,
// so that the scheduler places a task only where its user may run; the
// client checks again at start, with the user's groups as the node has
// them.
type TaskUserPolicy struct {
	// Allowed, when not empty, are the only users tasks may run as.
	Allowed []string `json:",omitempty"`
	// Denied are users tasks may never run as.
	Denied []string `json:",omitempty"`
	// DeniedGroups deny every user of these groups, primary or
	// supplementary; nil is DefaultDeniedTaskGroups, empty denies none.
	DeniedGroups []string
	// DeniedMembers are the users the client found in DeniedGroups (in
	// its /etc/group and /etc/passwd), so that the scheduler refuses them
	// by name; users only a directory service knows are refused at start.
	DeniedMembers []string `json:",omitempty"`
}

// Groups is DeniedGroups, or DefaultDeniedTaskGroups when unset.
func (p *TaskUserPolicy) Groups() []string {
	if p.DeniedGroups == nil {
		return DefaultDeniedTaskGroups
	}
	return p.DeniedGroups
}

// Copy returns a deep copy.
func (p *TaskUserPolicy) Copy() *TaskUserPolicy {
	if p == nil {
		return nil
	}
	return &TaskUserPolicy{Allowed: slices.Clone(p.Allowed), Denied: slices.Clone(p.Denied),
		DeniedGroups: slices.Clone(p.DeniedGroups), DeniedMembers: slices.Clone(p.DeniedMembers)}
}

// Refusal says why a task may not run as user (any of its names: as the
// task gives it, and as the node resolves it) under the policy, "" when
// it may. A group's refusal names the group.
func (p *TaskUserPolicy) Refusal(names ...string) string {
	if p == nil {
		return ""
	}
	has := func(list []string) string {
		for _, n := range names {
			if n != "" && slices.Contains(list, n) {
				return n
			}
		}
		return ""
	}
	switch {
	case len(p.Allowed) > 0 && has(p.Allowed) == "":
		return fmt.Sprintf("it is not one of the users the node's client { user { allowed } } lists (%s)", strings.Join(p.Allowed, ", "))
	case has(p.Denied) != "":
		return "the node's client { user { denied } } lists it"
	case has(p.DeniedMembers) != "":
		return fmt.Sprintf("it is in a group the node's client { user { denied_groups } } refuses (%s)", strings.Join(p.Groups(), ", "))
	}
	return ""
}

// TaskUserRefusal says why a task's user may not run on a node: the
// scheduler's placement failure and the client's own refusal.
func TaskUserRefusal(task, user, node, why string) string {
	return fmt.Sprintf("task %s runs as user %s; node %s does not allow it: %s; choose another user, "+
		"or change client { user { ... } } in the node's agent config", QuoteName(task), QuoteName(user), QuoteName(node), why)
}

// UserTaskOn is the group's first task whose user node n's policy
// refuses, with why; nil if none. Docker tasks' users are the
// container's, and root is allow_root_tasks' (RootTaskOn).
func (tg *TaskGroup) UserTaskOn(n *Node) (*Task, string, string) {
	if n.TaskUsers == nil {
		return nil, "", ""
	}
	for _, t := range tg.Tasks {
		if t == nil || t.Driver == DriverDocker || t.NeedsRoot() {
			continue
		}
		user := t.RunAs()
		if user == "" {
			user = DefaultTaskUser
		}
		if why := n.TaskUsers.Refusal(user); why != "" {
			return t, user, why
		}
	}
	return nil, "", ""
}
