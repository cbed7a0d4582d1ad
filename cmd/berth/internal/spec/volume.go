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
	var s scope // the file's top level
	fs := newFields()
	seen := fs.seen // field -> line
	for _, f := range root.fields {
		if f.name == "capability" {
			if _, ok := seen[f.name]; !ok {
				seen[f.name] = f.line
			}
		} else if !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "id":
			v.ID, _ = p.str(f, s)
		case "name":
			v.Name, _ = p.str(f, s)
		case "namespace":
			if ns, ok := p.str(f, s); ok && ns != "" {
				p.checkName(f.line, s.sub("namespace"), structs.NameNamespace, ns)
				v.Namespace = ns
			}
		case "type":
			if typ, ok := p.str(f, s); ok && typ != "csi" {
				p.bad(f.line, s, "type", `%q is not supported; berth volumes are type = "csi"`, typ)
			}
		case "plugin_id":
			v.PluginID, _ = p.str(f, s)
		case "external_id":
			v.ExternalID, _ = p.str(f, s)
		case "capacity_min":
			v.RequestedCapacityMin, _ = p.size(f, s)
		case "capacity_max":
			v.RequestedCapacityMax, _ = p.size(f, s)
		case "snapshot_id":
			v.SnapshotID, _ = p.str(f, s)
		case "clone_id":
			v.CloneID, _ = p.str(f, s)
		case "capability":
			for _, b := range p.blocks(f, s) {
				v.RequestedCapabilities = append(v.RequestedCapabilities, p.capability(b, s.sub("capability")))
			}
		case "mount_options":
			if b := p.block(f, s); b != nil {
				m := p.mountOptions(b, s.sub("mount_options"))
				v.MountOptions = &api.MountOptions{FSType: m.FSType, MountFlags: m.MountFlags, GroupPolicy: m.GroupPolicy}
			}
		case "topology_request":
			if b := p.block(f, s); b != nil {
				v.Topologies, v.PreferredTopologies = p.topologyRequest(b, s.sub("topology_request"))
			}
		case "secrets":
			v.Secrets = p.strMap(f, s)
		case "parameters":
			v.Parameters = p.strMap(f, s)
		case "context":
			v.Context = p.strMap(f, s)
		default:
			fs.unknown(p, f, s, volumeFields)
		}
	}

	// A required field that is misspelt is reported once, as unknown.
	if _, ok := seen["id"]; !ok {
		if !fs.has("id") {
			p.missing(1, s, "id", `every volume needs one, e.g. id = "data"`)
		}
	} else if v.ID == "" {
		p.bad(seen["id"], s, "id", `is empty; every volume needs one, e.g. id = "data"`)
	} else {
		p.checkName(seen["id"], s.sub("id"), structs.NameVolumeID, v.ID)
	}
	if _, ok := seen["plugin_id"]; !ok {
		if !fs.has("plugin_id") {
			p.missing(1, s, "plugin_id", "name the CSI plugin that serves the volume (see berth plugin status)")
		}
	} else if strings.TrimSpace(v.PluginID) == "" {
		p.bad(seen["plugin_id"], s, "plugin_id", "is empty; name the CSI plugin that serves the volume (see berth plugin status)")
	} else {
		p.checkName(seen["plugin_id"], s.sub("plugin_id"), structs.NamePluginID, v.PluginID)
	}
	if !fs.has("type") && !pascal {
		p.missing(1, s, "type", `add type = "csi"`)
	}
	if !fs.has("capability") {
		p.missing(1, s, "capability", `add at least one capability block with access_mode (e.g. "single-node-writer") and attachment_mode (e.g. "file-system")`)
	}
	if v.RequestedCapacityMax > 0 && v.RequestedCapacityMin > v.RequestedCapacityMax {
		p.badIn(seen["capacity_min"], s.sub("capacity_min"), "%d bytes is more than capacity_max (%d bytes)",
			v.RequestedCapacityMin, v.RequestedCapacityMax)
	}
	if v.SnapshotID != "" && v.CloneID != "" {
		// Reported at whichever comes second, naming the other's line.
		later, earlier := "clone_id", "snapshot_id"
		if seen["snapshot_id"] > seen["clone_id"] {
			later, earlier = earlier, later
		}
		p.badIn(seen[later], s.sub(later), "set snapshot_id or clone_id, not both (%s is set at line %d); a new volume is either restored from a snapshot or cloned from a volume",
			earlier, seen[earlier])
	}
	p.checkPurpose(v, fs, purpose)
	if v.Name == "" {
		v.Name = v.ID
	}
	return v
}

// checkPurpose checks the fields that depend on what the spec is for.
func (p *parser) checkPurpose(v *api.VolumeSpec, fs *fields, purpose Purpose) {
	var s scope
	seen := fs.seen
	switch purpose {
	case ForRegister:
		if v.ExternalID == "" && !fs.guessed["external_id"] {
			p.missing(lineOr(seen, "external_id", 1), s, "external_id", "registering needs the storage provider's ID of an existing volume "+
				"(to have the plugin make a new volume, use \"berth volume create\")")
		}
	case ForCreate:
		if v.ExternalID != "" {
			p.badIn(seen["external_id"], s.sub("external_id"), "not allowed when creating a volume; the plugin makes the volume and its external ID "+
				"(to add a volume that already exists, remove external_id and use \"berth volume register\")")
		}
	}
}

var capabilityFields = []string{"access_mode", "attachment_mode"}

// capability reads one capability block.
func (p *parser) capability(b *node, s scope) *structs.CSIVolumeCapability {
	c := &structs.CSIVolumeCapability{}
	fs := newFields()
	for _, f := range b.fields {
		if !p.once(fs.seen, f, s) {
			continue
		}
		switch f.name {
		case "access_mode":
			m, _ := p.oneOf(f, s, accessModeNames())
			c.AccessMode = structs.CSIVolumeAccessMode(m)
		case "attachment_mode":
			m, _ := p.oneOf(f, s, attachmentModeNames)
			c.AttachmentMode = structs.CSIVolumeAttachmentMode(m)
		default:
			fs.unknown(p, f, s, capabilityFields)
		}
	}
	if !fs.has("access_mode") {
		p.missing(b.line, s, "access_mode", "one of "+quoteList(accessModeNames()))
	}
	if !fs.has("attachment_mode") {
		p.missing(b.line, s, "attachment_mode", "one of "+quoteList(attachmentModeNames))
	}
	return c
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

var mountFields = []string{"fs_type", "mount_flags", "group_policy"}

// mountOptions reads a mount_options block: a volume spec's, or a job's
// volume request's.
func (p *parser) mountOptions(b *node, s scope) *structs.CSIMountOptions {
	m := &structs.CSIMountOptions{}
	seen := map[string]int{}
	for _, f := range b.fields {
		if f.val.kind == kindNull || !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "fs_type":
			m.FSType, _ = p.str(f, s)
		case "group_policy":
			v, _ := p.str(f, s)
			m.GroupPolicy = structs.CSIGroupPolicy(v)
			if err := m.GroupPolicy.Validate(); err != nil {
				p.bad(f.line, s, "group_policy", "is %q; use %q (the default), %q or %q", v,
					structs.GroupPolicyOnRootMismatch, structs.GroupPolicyAlways, structs.GroupPolicyNone)
			}
		case "mount_flags":
			m.MountFlags = p.strList(f, s)
			for i, flag := range m.MountFlags {
				if flag == structs.Redacted {
					p.bad(f.line, s, fmt.Sprintf("mount_flags[%d]", i), "is %q, as the API shows every mount flag; put the real flag back", flag)
				}
			}
		default:
			p.unknown(f, s, mountFields)
		}
	}
	return m
}
