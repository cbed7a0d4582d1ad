package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/berth-csi/berth/structs"
)

var (
	dockerConfigFields = structs.DockerConfigKeys
	dockerNetworkModes = structs.DockerNetworkModes
)

// dockerConfig reads the docker driver's config block into the task's
// config map, as structs.DockerTaskConfig reads it on the servers and the
// client: only what the block sets, so that the defaults (network_mode
// "host", force_pull false) live in one place.
func (p *parser) dockerConfig(b *node, line int, s scope) map[string]any {
	cfg := map[string]any{}
	fs := newFields()
	seen := fs.seen
	for _, f := range b.fields {
		if f.val.kind == kindNull || !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case structs.DockerConfigImage:
			if img, ok := p.str(f, s); ok {
				switch {
				case strings.TrimSpace(img) == "":
					p.bad(f.line, s, f.name, `is empty; name the image to run, e.g. "postgres:16"`)
					continue
				case strings.ContainsAny(img, " \t\r\n"):
					p.bad(f.line, s, f.name, `%q must not contain spaces; name one image, e.g. "postgres:16"`, img)
					continue
				}
				cfg[f.name] = img
			}
		case structs.DockerConfigCommand:
			if c, ok := p.str(f, s); ok {
				if strings.TrimSpace(c) == "" {
					p.bad(f.line, s, f.name, `is empty; name the program to run, e.g. "/bin/sh", or leave command out to run the image's`)
					continue
				}
				cfg[f.name] = c
			}
		case structs.DockerConfigArgs, structs.DockerConfigEntrypoint:
			cfg[f.name] = p.strList(f, s)
		case structs.DockerConfigPrivileged, structs.DockerConfigForcePull:
			if v, ok := p.boolean(f, s); ok {
				cfg[f.name] = v
			}
		case structs.DockerConfigCapAdd, structs.DockerConfigCapDrop:
			if caps := p.capabilities(f, s); caps != nil {
				cfg[f.name] = caps
			}
		case structs.DockerConfigNetworkMode:
			if m, ok := p.oneOf(f, s, dockerNetworkModes); ok {
				cfg[f.name] = m
			}
		case structs.DockerConfigLabels:
			labels := p.strMap(f, s)
			for k := range labels {
				if strings.HasPrefix(k, structs.DockerReservedLabelPrefix) {
					p.bad(f.line, s.sub(f.name), k, "is berth's own: labels starting with %q name the allocation a container belongs to; choose another name",
						structs.DockerReservedLabelPrefix)
					delete(labels, k)
				}
			}
			if labels != nil {
				cfg[f.name] = labels
			}
		default:
			fs.unknown(p, f, s, dockerConfigFields)
		}
	}
	if !fs.has(structs.DockerConfigImage) {
		p.missing(line, s, structs.DockerConfigImage, `name the image to run, e.g. image = "postgres:16"; it must be on the node already, or set force_pull = true`)
	}
	return cfg
}

// capabilities reads cap_add or cap_drop: Linux capabilities as people
// write them ("SYS_ADMIN", "cap_sys_admin"), stored as the servers do
// (structs.NormalizeCapability: "sys_admin"), each one once.
func (p *parser) capabilities(f *field, s scope) []string {
	if f.val.kind != kindList {
		p.strList(f, s) // says what it must be
		return nil
	}
	out := []string{}
	for i, item := range f.val.items {
		name := fmt.Sprintf("%s[%d]", f.name, i)
		if item.kind != kindString {
			p.bad(item.line, s, name, "must be a string, not %s", item.describe())
			continue
		}
		c, ok := structs.NormalizeCapability(item.str)
		if !ok {
			sg := structs.SuggestName(c, append([]string{structs.CapAll}, structs.LinuxCapabilities...))
			hint := `; name one as capabilities(7) does, without CAP_, e.g. "sys_admin"`
			if sg != "" {
				hint = fmt.Sprintf("; did you mean %q?", sg)
			}
			p.bad(item.line, s, name, "%q is not a Linux capability%s", item.str, hint)
			continue
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}
