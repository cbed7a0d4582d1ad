package structs

import (
	"sort"
	"strconv"
	"strings"
)

// Task drivers: what `task { driver }` may name.
const (
	DriverExec   = "exec"   // a host binary in its own mount namespace
	DriverDocker = "docker" // a container, through the local Docker Engine API
)

// TaskDrivers lists the drivers berth runs, in the order messages name them.
var TaskDrivers = []string{DriverExec, DriverDocker}

// The docker driver's config keys (`config { }` of a docker task).
const (
	DockerConfigImage       = "image"
	DockerConfigCommand     = "command"
	DockerConfigArgs        = "args"
	DockerConfigEntrypoint  = "entrypoint"
	DockerConfigPrivileged  = "privileged"
	DockerConfigNetworkMode = "network_mode"
	DockerConfigLabels      = "labels"
	DockerConfigForcePull   = "force_pull"
	DockerConfigCapAdd      = "cap_add"
	DockerConfigCapDrop     = "cap_drop"
)

// DockerConfigKeys lists the docker config's keys, in the order messages
// and the docs name them.
var DockerConfigKeys = []string{DockerConfigImage, DockerConfigCommand, DockerConfigArgs, DockerConfigEntrypoint,
	DockerConfigPrivileged, DockerConfigCapAdd, DockerConfigCapDrop, DockerConfigNetworkMode, DockerConfigLabels,
	DockerConfigForcePull}

// Docker network modes (`network_mode`); bridge is the default: host
// shares the node's network (its loopback, where agents listen, included)
// and needs the client's driver "docker" { allow_host_network = true }.
const (
	DockerNetworkHost   = "host"
	DockerNetworkBridge = "bridge"
	DockerNetworkNone   = "none"
)

// DockerNetworkModes lists the network modes a docker task may ask for.
var DockerNetworkModes = []string{DockerNetworkHost, DockerNetworkBridge, DockerNetworkNone}

// DockerReservedLabelPrefix starts the container labels berth sets itself
// (the alloc, job, group and task a container belongs to); a task's own
// labels may not use it, or a task could pass a container off as another
// allocation's.
const DockerReservedLabelPrefix = "berth."

// DockerConfig is a docker task's config, as DockerTaskConfig reads it
// from Task.Config.
type DockerConfig struct {
	// Image is the image to run ("postgres:16"); it must be on the node
	// already unless ForcePull.
	Image string
	// Command and Args make the container's command (see Cmd); empty
	// keeps the image's CMD.
	Command string
	Args    []string
	// Entrypoint replaces the image's ENTRYPOINT; empty keeps it.
	Entrypoint []string
	// Privileged runs the container privileged: only on clients with
	// driver "docker" { allow_privileged = true }.
	Privileged bool
	// CapAdd and CapDrop change the container's capabilities from
	// Docker's default set (normalized: "sys_admin", "all"). CapAdd must
	// be within the client's driver "docker" { allow_caps }.
	CapAdd, CapDrop []string
	// NetworkMode is bridge (the default), host (only on clients that
	// allow it) or none.
	NetworkMode string
	// Labels are added to the container's, next to berth's own.
	Labels map[string]string
	// ForcePull pulls the image even when the node has it.
	ForcePull bool
}

// Cmd is the container's command: Command followed by Args when Command
// is set; Args alone otherwise, passed to the image's entrypoint as
// Nomad's docker driver does; nil (the image's CMD) when neither is.
func (c *DockerConfig) Cmd() []string {
	if c.Command == "" {
		if len(c.Args) == 0 {
			return nil
		}
		return append([]string(nil), c.Args...)
	}
	return append([]string{c.Command}, c.Args...)
}

// DockerTaskConfig reads a docker task's config as the servers check it
// and the client runs it. Values come as the job spec parser writes them
// ([]string, map[string]string) or as JSON and msgpack decode them ([]any,
// map[string]any). Its error lists every problem: unknown keys (with the
// key most likely meant), values of the wrong type and what to write
// instead. It does not name the task: Task.DockerConfig does.
func DockerTaskConfig(cfg map[string]any) (*DockerConfig, error) {
	var p problems
	c := &DockerConfig{NetworkMode: DockerNetworkBridge}
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := cfg[k]
		switch k {
		case DockerConfigImage:
			c.Image = dockerString(&p, k, v, `image = "postgres:16"`)
		case DockerConfigCommand:
			c.Command = dockerString(&p, k, v, `command = "/bin/sh"`)
			if _, ok := v.(string); ok && strings.TrimSpace(c.Command) == "" {
				p.add(`command is empty; name the program to run, e.g. command = "/bin/sh", or leave command out to run the image's`)
			}
		case DockerConfigArgs:
			c.Args = dockerStrings(&p, k, v, `args = ["-c", "echo hello"]`)
		case DockerConfigEntrypoint:
			c.Entrypoint = dockerStrings(&p, k, v, `entrypoint = ["/bin/sh", "-c"]`)
		case DockerConfigPrivileged:
			c.Privileged = dockerBool(&p, k, v)
		case DockerConfigForcePull:
			c.ForcePull = dockerBool(&p, k, v)
		case DockerConfigCapAdd, DockerConfigCapDrop:
			caps, err := NormalizeCapabilities(k, dockerStrings(&p, k, v, k+` = ["sys_admin"]`))
			if err != nil {
				p.addErr("", err)
			}
			if k == DockerConfigCapAdd {
				c.CapAdd = caps
			} else {
				c.CapDrop = caps
			}
		case DockerConfigNetworkMode:
			if m := dockerString(&p, k, v, `network_mode = "bridge"`); m != "" {
				if !contains(DockerNetworkModes, m) {
					p.add("network_mode %s must be %s%s", QuoteName(m), orList(DockerNetworkModes), didYouMean(m, DockerNetworkModes))
				}
				c.NetworkMode = m
			}
		case DockerConfigLabels:
			c.Labels = dockerLabels(&p, v)
		default:
			if sg := SuggestName(k, DockerConfigKeys); sg != "" {
				p.add("unknown key %s; did you mean %q?", QuoteName(k), sg)
			} else {
				p.add("unknown key %s; docker takes %s", QuoteName(k), andList(DockerConfigKeys))
			}
		}
	}
	if img, set := cfg[DockerConfigImage]; !set {
		p.add(`missing image; name the image to run, e.g. image = "postgres:16"`)
	} else if _, ok := img.(string); ok {
		switch {
		case strings.TrimSpace(c.Image) == "":
			p.add(`image is empty; name the image to run, e.g. image = "postgres:16"`)
		case strings.ContainsAny(c.Image, " \t\r\n"):
			p.add(`image %s must not contain spaces; name one image, e.g. image = "postgres:16"`, QuoteName(c.Image))
		}
	}
	if len(p.list) > 0 {
		return nil, NewError(CodeBadRequest, "%s", p.String())
	}
	return c, nil
}

// DockerConfig reads the task's config as a docker task's (see
// DockerTaskConfig); its error names the task.
func (t *Task) DockerConfig() (*DockerConfig, error) {
	c, err := DockerTaskConfig(t.Config)
	if err != nil {
		return nil, NewError(CodeBadRequest, "task %s: config: %v", QuoteName(t.Name), err)
	}
	return c, nil
}

// PrivilegedTask is the group's first docker task that asks for a
// privileged container, nil if none does. It reads the config as stored,
// which Validate checked.
func (tg *TaskGroup) PrivilegedTask() *Task {
	for _, t := range tg.Tasks {
		if t == nil || t.Driver != DriverDocker {
			continue
		}
		if priv, _ := t.Config[DockerConfigPrivileged].(bool); priv {
			return t
		}
	}
	return nil
}

// HostNetworkTask is the group's first docker task that asks for the
// host's network, nil if none does.
func (tg *TaskGroup) HostNetworkTask() *Task {
	for _, t := range tg.Tasks {
		if t == nil || t.Driver != DriverDocker {
			continue
		}
		if m, _ := t.Config[DockerConfigNetworkMode].(string); m == DockerNetworkHost {
			return t
		}
	}
	return nil
}

// DockerUserIsRoot reports whether a container user (name, uid,
// "user:group") is root by itself: "", the image's default when it names
// none, is root too. A name other than root is known only in the image's
// /etc/passwd.
func DockerUserIsRoot(user string) bool {
	u, _, _ := strings.Cut(user, ":")
	uid, err := strconv.ParseUint(u, 10, 32)
	return u == "" || u == RootUser || err == nil && uid == 0
}

// CapsTask is the group's first docker task whose cap_add holds a
// capability that allowed (a node's allow_caps) does not, and those
// capabilities; nil if every task's fit. It reads the config as stored,
// which Validate checked.
func (tg *TaskGroup) CapsTask(allowed func(driver string) []string) (*Task, []string) {
	for _, t := range tg.Tasks {
		if t == nil || t.Driver != DriverDocker || t.Config[DockerConfigCapAdd] == nil {
			continue
		}
		c, err := DockerTaskConfig(t.Config)
		if err != nil {
			continue
		}
		if missing := CapsNotAllowed(c.CapAdd, allowed(t.Driver)); len(missing) > 0 {
			return t, missing
		}
	}
	return nil, nil
}

// validateDockerConfig checks a docker task's config as the client reads
// it (DockerTaskConfig).
func validateDockerConfig(p *problems, cfg map[string]any, at string) {
	if _, err := DockerTaskConfig(cfg); err != nil {
		p.add("%s%v", at, err)
	}
}

func dockerString(p *problems, key string, v any, example string) string {
	s, ok := v.(string)
	if !ok {
		p.add("%s must be a string, not %s; write e.g. %s", key, typeName(v), example)
	}
	return s
}

func dockerStrings(p *problems, key string, v any, example string) []string {
	switch l := v.(type) {
	case []string:
		return append([]string(nil), l...)
	case []any:
		out := make([]string, 0, len(l))
		for i, item := range l {
			s, ok := item.(string)
			if !ok {
				p.add("%s[%d] must be a string, not %s", key, i, typeName(item))
				continue
			}
			out = append(out, s)
		}
		return out
	}
	p.add("%s must be a list of strings, not %s; write e.g. %s", key, typeName(v), example)
	return nil
}

func dockerBool(p *problems, key string, v any) bool {
	b, ok := v.(bool)
	if !ok {
		hint := ""
		if s, isStr := v.(string); isStr && (s == "true" || s == "false") {
			hint = "; leave out the quotes"
		}
		p.add("%s must be true or false, not %s%s", key, typeName(v), hint)
	}
	return b
}

func dockerLabels(p *problems, v any) map[string]string {
	out := map[string]string{}
	add := func(k string, val any) {
		s, ok := val.(string)
		switch {
		case !ok:
			p.add("labels[%s] must be a string, not %s", QuoteName(k), typeName(val))
		case strings.TrimSpace(k) == "":
			p.add("labels has an empty name; give each label a name, e.g. labels { team = \"db\" }")
		case strings.HasPrefix(k, DockerReservedLabelPrefix):
			p.add("labels[%s]: names starting with %q are berth's own; choose another name", QuoteName(k), DockerReservedLabelPrefix)
		default:
			out[k] = s
		}
	}
	switch m := v.(type) {
	case map[string]string:
		for k, val := range m {
			add(k, val)
		}
	case map[string]any:
		for k, val := range m {
			add(k, val)
		}
	default:
		p.add(`labels must be a map of strings, not %s; write e.g. labels { team = "db" }`, typeName(v))
		return nil
	}
	return out
}
