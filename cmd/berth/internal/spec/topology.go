package spec

import "github.com/berth-csi/berth/structs"

var (
	topologyRequestFields = []string{"required", "preferred"}
	topologyListFields    = []string{"topology"}
	topologyFields        = []string{"segments"}
)

// topologyRequest reads
//
//	topology_request {
//	  required {
//	    topology { segments = { zone = "a" } }
//	    ...
//	  }
//	  preferred {
//	    topology { segments = { zone = "a", rack = "r1" } }
//	    ...
//	  }
//	}
//
// into the volume's required and preferred topologies (in order).
func (p *parser) topologyRequest(b *node, s scope) (required, preferred []*structs.CSITopology) {
	seen := map[string]int{}
	for _, f := range b.fields {
		if !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "required":
			if rb := p.block(f, s); rb != nil {
				required = p.topologies(rb, s.sub("required"))
			}
		case "preferred":
			if pb := p.block(f, s); pb != nil {
				preferred = p.topologies(pb, s.sub("preferred"))
			}
		default:
			p.unknown(f, s, topologyRequestFields)
		}
	}
	return required, preferred
}

// topologies reads the repeated topology blocks of required.
func (p *parser) topologies(b *node, s scope) []*structs.CSITopology {
	var out []*structs.CSITopology
	found := false
	for _, f := range b.fields {
		if f.name != "topology" {
			p.unknown(f, s, topologyListFields)
			continue
		}
		found = true
		for _, tb := range p.blocks(f, s) {
			if t := p.topology(tb, s.sub("topology")); t != nil {
				out = append(out, t)
			}
		}
	}
	if !found {
		p.badIn(b.line, s, `has no topology block; add topology { segments = { zone = "a" } } or remove it`)
	}
	return out
}

// topology reads one topology block.
func (p *parser) topology(b *node, s scope) *structs.CSITopology {
	var t *structs.CSITopology
	fs := newFields()
	for _, f := range b.fields {
		if !p.once(fs.seen, f, s) {
			continue
		}
		if f.name != "segments" {
			fs.unknown(p, f, s, topologyFields)
			continue
		}
		segs := p.strMap(f, s)
		if segs == nil {
			continue
		}
		if len(segs) == 0 {
			p.bad(f.line, s, "segments", `is empty; name at least one segment, e.g. zone = "a"`)
			continue
		}
		t = &structs.CSITopology{Segments: segs}
	}
	if !fs.has("segments") {
		p.missing(b.line, s, "segments", `e.g. segments = { zone = "a" }`)
	}
	return t
}
