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
//	}
//
// into the volume's required topologies.
func (p *parser) topologyRequest(b *node, s scope) []*structs.CSITopology {
	var out []*structs.CSITopology
	seen := map[string]int{}
	for _, f := range b.fields {
		if !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "required":
			if rb := p.block(f, s); rb != nil {
				out = p.topologies(rb, s.sub("required"))
			}
		case "preferred":
			p.bad(f.line, s, "preferred", "topologies are not supported yet; berth keeps only required ones. "+
				"Move the topologies to required, or remove the block")
		default:
			p.unknown(f, s, topologyRequestFields)
		}
	}
	return out
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
