package spec

import "github.com/berth-csi/berth/structs"

var (
	topologyRequestFields = []string{"required", "preferred"}
	topologyListFields    = []string{"topology"}
	topologyFields        = []string{"segments"}
)

// topologyRequest reads
//
//	topology_request { required { topology { segments = { zone = "a" } } ... } }
//
// into the volume's required topologies.
func (p *parser) topologyRequest(b *node) []*structs.CSITopology {
	var out []*structs.CSITopology
	seen := map[string]int{}
	for _, f := range b.fields {
		if !p.once(seen, f, "topology_request") {
			continue
		}
		switch f.name {
		case "required":
			if rb := p.block(f, "topology_request.required"); rb != nil {
				out = p.topologies(rb, "topology_request.required")
			}
		case "preferred":
			p.errorf(f.line, "topology_request.preferred",
				"topology_request.preferred: preferred topologies are not supported yet; "+
					"berth keeps only required ones. Move the topologies to required, or remove the block")
		default:
			p.unknown(f, "topology_request", topologyRequestFields)
		}
	}
	return out
}

// topologies reads the repeated topology blocks of required.
func (p *parser) topologies(b *node, path string) []*structs.CSITopology {
	var out []*structs.CSITopology
	tp := join(path, "topology")
	found := false
	for _, f := range b.fields {
		if f.name != "topology" {
			p.unknown(f, path, topologyListFields)
			continue
		}
		found = true
		for _, tb := range p.blocks(f, tp) {
			if t := p.topology(tb, tp); t != nil {
				out = append(out, t)
			}
		}
	}
	if !found {
		p.errorf(b.line, path, "%s: has no topology block; add topology { segments = { zone = \"a\" } } or remove it", path)
	}
	return out
}

// topology reads one topology block.
func (p *parser) topology(b *node, path string) *structs.CSITopology {
	var t *structs.CSITopology
	seen := map[string]int{}
	for _, f := range b.fields {
		if !p.once(seen, f, path) {
			continue
		}
		if f.name != "segments" {
			p.unknown(f, path, topologyFields)
			continue
		}
		segs := p.stringMap(f, join(path, "segments"))
		if segs == nil {
			continue
		}
		if len(segs) == 0 {
			p.errorf(f.line, join(path, "segments"), "%s.segments: is empty; name at least one segment, e.g. zone = \"a\"", path)
			continue
		}
		t = &structs.CSITopology{Segments: segs}
	}
	if _, ok := seen["segments"]; !ok {
		p.errorf(b.line, join(path, "segments"), "%s: missing segments; e.g. segments = { zone = \"a\" }", path)
	}
	return t
}
