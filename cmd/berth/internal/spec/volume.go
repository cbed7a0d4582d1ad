package spec

import (
	"fmt"
	"strings"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

// volumeFields are the top-level fields of a volume spec, in the order
// people write them.
var volumeFields = []string{
	"id", "name", "namespace", "type", "plugin_id", "external_id",
	"capacity_min", "capacity_max", "snapshot_id", "clone_id",
	"capability", "mount_options", "topology_request",
	"secrets", "parameters", "context",
}

// volume decodes the tree of a whole spec and checks it for purpose.
func (p *parser) volume(root *node, pascal bool, purpose Purpose) *api.VolumeSpec {
	v := &api.VolumeSpec{}
	seen := map[string]int{} // field -> line, for fields allowed once
	var typ string
	var minLine int
	for _, f := range root.fields {
		if f.name == "capability" {
			if _, ok := seen[f.name]; !ok {
				seen[f.name] = f.line
			}
		} else if !p.once(seen, f, "") {
			continue
		}
		switch f.name {
		case "id":
			v.ID = p.str(f, "id")
		case "name":
			v.Name = p.str(f, "name")
		case "namespace":
			v.Namespace = p.str(f, "namespace")
		case "type":
			typ = p.str(f, "type")
			if typ != "" && typ != "csi" {
				p.errorf(f.line, "type", "type: %q is not supported; berth volumes are type = \"csi\"", typ)
			}
		case "plugin_id":
			v.PluginID = p.str(f, "plugin_id")
		case "external_id":
			v.ExternalID = p.str(f, "external_id")
		case "capacity_min":
			v.RequestedCapacityMin = p.size(f, "capacity_min")
			minLine = f.line
		case "capacity_max":
			v.RequestedCapacityMax = p.size(f, "capacity_max")
		case "snapshot_id":
			v.SnapshotID = p.str(f, "snapshot_id")
		case "clone_id":
			v.CloneID = p.str(f, "clone_id")
		case "capability":
			for _, b := range p.blocks(f, "capability") {
				if c := p.capability(b); c != nil {
					v.RequestedCapabilities = append(v.RequestedCapabilities, c)
				}
			}
		case "mount_options":
			if b := p.block(f, "mount_options"); b != nil {
				v.MountOptions = p.mountOptions(b)
			}
		case "topology_request":
			if b := p.block(f, "topology_request"); b != nil {
				v.Topologies = p.topologyRequest(b)
			}
		case "secrets":
			v.Secrets = p.stringMap(f, "secrets")
		case "parameters":
			v.Parameters = p.stringMap(f, "parameters")
		case "context":
			v.Context = p.stringMap(f, "context")
		default:
			p.unknown(f, "", volumeFields)
		}
	}

	if _, ok := seen["id"]; !ok {
		p.errorf(1, "id", `id: missing; every volume needs one, e.g. id = "data"`)
	} else if strings.ContainsAny(v.ID, "/ \t\n") {
		p.errorf(seen["id"], "id", "id: %q must not contain '/' or spaces", v.ID)
	}
	if _, ok := seen["plugin_id"]; !ok {
		p.errorf(1, "plugin_id", "plugin_id: missing; name the CSI plugin that serves the volume (see berth plugin status)")
	}
	if _, ok := seen["type"]; !ok && !pascal {
		p.errorf(1, "type", `type: missing; add type = "csi"`)
	}
	if _, ok := seen["capability"]; !ok {
		p.errorf(1, "capability", `capability: missing; add at least one capability { access_mode = "single-node-writer"  attachment_mode = "file-system" }`)
	}
	if v.RequestedCapacityMax > 0 && v.RequestedCapacityMin > v.RequestedCapacityMax {
		p.errorf(minLine, "capacity_min", "capacity_min: %d bytes is more than capacity_max (%d bytes)",
			v.RequestedCapacityMin, v.RequestedCapacityMax)
	}
	if v.SnapshotID != "" && v.CloneID != "" {
		// Reported at whichever comes second, naming the other's line.
		later, earlier := "clone_id", "snapshot_id"
		if seen["snapshot_id"] > seen["clone_id"] {
			later, earlier = earlier, later
		}
		p.errorf(seen[later], later, "%s: set snapshot_id or clone_id, not both (%s is set at line %d); a new volume is either restored from a snapshot or cloned from a volume",
			later, earlier, seen[earlier])
	}
	p.checkPurpose(v, seen, purpose)
	if v.Name == "" {
		v.Name = v.ID
	}
	return v
}

// checkPurpose checks the fields that depend on what the spec is for.
func (p *parser) checkPurpose(v *api.VolumeSpec, seen map[string]int, purpose Purpose) {
	switch purpose {
	case ForRegister:
		if v.ExternalID == "" {
			p.errorf(lineOr(seen, "external_id", 1), "external_id", "external_id: missing; registering needs the storage provider's ID of an existing volume "+
				"(to have the plugin make a new volume, use \"berth volume create\")")
		}
	case ForCreate:
		if v.ExternalID != "" {
			p.errorf(seen["external_id"], "external_id", "external_id: not allowed when creating a volume; the plugin makes the volume and its external ID "+
				"(to add a volume that already exists, remove external_id and use \"berth volume register\")")
		}
	}
}

// once records a field that may appear once; a repeat is an error.
func (p *parser) once(seen map[string]int, f *field, path string) bool {
	if first, dup := seen[f.name]; dup {
		fp := join(path, f.name)
		p.errorf(f.line, fp, "%s: set twice (first at line %d)", fp, first)
		return false
	}
	seen[f.name] = f.line
	return true
}

// unknown reports a field the spec does not have, with the likeliest
// intended name.
func (p *parser) unknown(f *field, path string, known []string) {
	where := "in the volume spec"
	if path != "" {
		where = "in " + path
	}
	fp := join(path, f.name)
	if s := suggest(f.name, known); s != "" {
		p.errorf(f.line, fp, "unknown field %q %s; did you mean %q?", f.name, where, s)
		return
	}
	p.errorf(f.line, fp, "unknown field %q %s; valid fields are %s", f.name, where, strings.Join(known, ", "))
}

// str reads a string value.
func (p *parser) str(f *field, path string) string {
	if f.val.kind == kindString {
		return f.val.str
	}
	hint := ""
	if f.val.kind == kindNumber || f.val.kind == kindBool {
		hint = "; put it in quotes"
	}
	p.errorf(f.line, path, "%s: must be a string, not %s%s", path, f.val.describe(), hint)
	return ""
}

// size reads a byte count from a size string or a number of bytes.
func (p *parser) size(f *field, path string) int64 {
	switch f.val.kind {
	case kindString, kindNumber:
		n, err := ParseSize(f.val.str)
		if err != nil {
			p.errorf(f.line, path, "%s: %v", path, err)
			return 0
		}
		return n
	}
	p.errorf(f.line, path, "%s: must be a size such as \"10GiB\" or a number of bytes, not %s", path, f.val.describe())
	return 0
}

// noLabels reports a labelled block (capability "x" { ... }).
func (p *parser) noLabels(n *node, path string) bool {
	if len(n.labels) == 0 {
		return true
	}
	p.errorf(n.line, path, "%s: takes no label; write %s { ... } without %q", path, path, n.labels[0])
	return false
}

// blocks reads a block that may repeat: one object or a list of objects.
func (p *parser) blocks(f *field, path string) []*node {
	if !p.noLabels(f.val, path) {
		return nil
	}
	switch f.val.kind {
	case kindObject:
		return []*node{f.val}
	case kindList:
		var out []*node
		for _, item := range f.val.items {
			if item.kind != kindObject {
				p.errorf(item.line, path, "%s: each one must be a block (%s { ... }), not %s", path, path, item.describe())
				continue
			}
			out = append(out, item)
		}
		return out
	}
	p.errorf(f.line, path, "%s: must be a block (%s { ... }), not %s", path, path, f.val.describe())
	return nil
}

// block reads a block that appears once.
func (p *parser) block(f *field, path string) *node {
	if !p.noLabels(f.val, path) {
		return nil
	}
	if f.val.kind == kindList && len(f.val.items) == 1 && f.val.items[0].kind == kindObject {
		return f.val.items[0]
	}
	if f.val.kind != kindObject {
		p.errorf(f.line, path, "%s: must be one block (%s { ... }), not %s", path, path, f.val.describe())
		return nil
	}
	return f.val
}

// stringMap reads a block of name = "value" pairs (secrets, parameters,
// context, segments). Numbers and bools are taken as their text.
func (p *parser) stringMap(f *field, path string) map[string]string {
	b := p.block(f, path)
	if b == nil {
		return nil
	}
	out := make(map[string]string, len(b.fields))
	lines := map[string]int{}
	for _, kv := range b.fields {
		fp := join(path, kv.name)
		if first, dup := lines[kv.name]; dup {
			p.errorf(kv.line, fp, "%s: set twice (first at line %d)", fp, first)
			continue
		}
		lines[kv.name] = kv.line
		switch kv.val.kind {
		case kindString, kindNumber:
			out[kv.name] = kv.val.str
		case kindBool:
			out[kv.name] = fmt.Sprint(kv.val.b)
		default:
			p.errorf(kv.line, fp, "%s: must be a string, not %s", fp, kv.val.describe())
		}
	}
	return out
}

// strList reads a list of strings.
func (p *parser) strList(f *field, path string) []string {
	if f.val.kind != kindList {
		p.errorf(f.line, path, "%s: must be a list of strings such as [\"noatime\"], not %s", path, f.val.describe())
		return nil
	}
	out := make([]string, 0, len(f.val.items))
	for i, item := range f.val.items {
		if item.kind != kindString {
			p.errorf(item.line, path, "%s[%d]: must be a string, not %s", path, i, item.describe())
			continue
		}
		out = append(out, item.str)
	}
	return out
}

var capabilityFields = []string{"access_mode", "attachment_mode"}

// capability reads one capability block.
func (p *parser) capability(b *node) *structs.CSIVolumeCapability {
	c := &structs.CSIVolumeCapability{}
	seen := map[string]int{}
	for _, f := range b.fields {
		if !p.once(seen, f, "capability") {
			continue
		}
		switch f.name {
		case "access_mode":
			c.AccessMode = structs.CSIVolumeAccessMode(p.str(f, "capability.access_mode"))
			if f.val.kind == kindString && !c.AccessMode.Valid() {
				p.badMode(f, "capability.access_mode", accessModeNames())
			}
		case "attachment_mode":
			c.AttachmentMode = structs.CSIVolumeAttachmentMode(p.str(f, "capability.attachment_mode"))
			if f.val.kind == kindString && !c.AttachmentMode.Valid() {
				p.badMode(f, "capability.attachment_mode", attachmentModeNames)
			}
		default:
			p.unknown(f, "capability", capabilityFields)
		}
	}
	if _, ok := seen["access_mode"]; !ok {
		p.errorf(b.line, "capability.access_mode", "capability: missing access_mode; one of %s", quoteList(accessModeNames()))
	}
	if _, ok := seen["attachment_mode"]; !ok {
		p.errorf(b.line, "capability.attachment_mode", "capability: missing attachment_mode; one of %s", quoteList(attachmentModeNames))
	}
	return c
}

func (p *parser) badMode(f *field, path string, valid []string) {
	msg := fmt.Sprintf("%s: %q is not one of %s", path, f.val.str, quoteList(valid))
	if s := suggest(f.val.str, valid); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	p.errorf(f.line, path, "%s", msg)
}

func accessModeNames() []string {
	names := make([]string, len(structs.AccessModes))
	for i, m := range structs.AccessModes {
		names[i] = string(m)
	}
	return names
}

var attachmentModeNames = []string{
	string(structs.CSIVolumeAttachmentModeFilesystem),
	string(structs.CSIVolumeAttachmentModeBlockDevice),
}

var mountFields = []string{"fs_type", "mount_flags"}

// mountOptions reads the mount_options block.
func (p *parser) mountOptions(b *node) *api.MountOptions {
	m := &api.MountOptions{}
	seen := map[string]int{}
	for _, f := range b.fields {
		if !p.once(seen, f, "mount_options") {
			continue
		}
		switch f.name {
		case "fs_type":
			m.FSType = p.str(f, "mount_options.fs_type")
		case "mount_flags":
			m.MountFlags = p.strList(f, "mount_options.mount_flags")
		default:
			p.unknown(f, "mount_options", mountFields)
		}
	}
	return m
}
