package spec

import "unicode"

// The API's own JSON for a volume (api.VolumeSpec: ID, PluginID,
// RequestedCapabilities, ...) is accepted too. pascalToSpec renames its
// fields to the spec's names in place, so one decoder reads both.

// pascalNames maps VolumeSpec's top-level fields to spec fields.
var pascalNames = map[string]string{
	"ID":                    "id",
	"Name":                  "name",
	"Namespace":             "namespace",
	"Type":                  "type",
	"ExternalID":            "external_id",
	"PluginID":              "plugin_id",
	"RequestedCapabilities": "capability",
	"MountOptions":          "mount_options",
	"Secrets":               "secrets",
	"Parameters":            "parameters",
	"Context":               "context",
	"RequestedCapacityMin":  "capacity_min",
	"RequestedCapacityMax":  "capacity_max",
	"SnapshotID":            "snapshot_id",
	"CloneID":               "clone_id",
}

var pascalCapability = map[string]string{"AccessMode": "access_mode", "AttachmentMode": "attachment_mode"}
var pascalMount = map[string]string{"FSType": "fs_type", "MountFlags": "mount_flags", "GroupPolicy": "group_policy"} // also a job volume's MountOptions
var pascalTopology = map[string]string{"Segments": "segments"}

// isPascal reports whether a JSON object uses the API's field names.
func isPascal(root *node) bool {
	if root == nil || root.kind != kindObject {
		return false
	}
	for _, f := range root.fields {
		if f.name != "" && unicode.IsUpper(rune(f.name[0])) {
			return true
		}
	}
	return false
}

// pascalToSpec renames the API's fields to the spec's. Names it does not
// know stay as they are and are reported as unknown by the decoder.
func pascalToSpec(root *node) {
	var request *field // the topology_request the topologies make
	kept := root.fields[:0]
	for _, f := range root.fields {
		switch f.name {
		case "RequestedCapabilities":
			renameEach(f.val, pascalCapability)
		case "MountOptions":
			renameEach(f.val, pascalMount)
		case "Topologies", "PreferredTopologies":
			// [{Segments}] is topology_request { required (or preferred)
			// { topology {...} } }, one block for both.
			renameEach(f.val, pascalTopology)
			kind := "required"
			if f.name == "PreferredTopologies" {
				kind = "preferred"
			}
			list := &node{kind: kindObject, line: f.line,
				fields: []*field{{name: "topology", line: f.line, val: f.val}}}
			if request == nil {
				request = &field{name: "topology_request", line: f.line, val: &node{kind: kindObject, line: f.line}}
				kept = append(kept, request)
			}
			request.val.fields = append(request.val.fields, &field{name: kind, line: f.line, val: list})
			continue
		}
		if n, ok := pascalNames[f.name]; ok {
			f.name = n
		}
		kept = append(kept, f)
	}
	root.fields = kept
}

// renameEach renames the fields of an object or of each object in a list.
func renameEach(n *node, names map[string]string) {
	switch n.kind {
	case kindObject:
		for _, f := range n.fields {
			if to, ok := names[f.name]; ok {
				f.name = to
			}
		}
	case kindList:
		for _, item := range n.items {
			renameEach(item, names)
		}
	}
}
