package spec

import (
	"github.com/berth-csi/berth/structs"
)

var (
	constraintFields = []string{"attribute", "operator", "value"}
	affinityFields   = []string{"attribute", "operator", "value", "weight"}
	spreadFields     = []string{"attribute", "weight", "target"}
	targetFields     = []string{"percent"}
)

// placement gathers a job's or group's constraint, affinity and spread
// blocks (each may repeat), read once the rest of the block is.
type placement struct {
	constraints []*structs.Constraint
	affinities  []*structs.Affinity
	spreads     []*structs.Spread
}

// add reads one constraint, affinity or spread field; false for a field
// of another name.
func (p *parser) placementField(pl *placement, f *field, s scope) bool {
	switch f.name {
	case "constraint":
		for _, b := range p.blocks(f, s) {
			pl.constraints = append(pl.constraints, p.constraint(b, s.sub("constraint")))
		}
	case "affinity":
		for _, b := range p.blocks(f, s) {
			pl.affinities = append(pl.affinities, p.affinity(b, s.sub("affinity")))
		}
	case "spread":
		for _, b := range p.blocks(f, s) {
			pl.spreads = append(pl.spreads, p.spread(b, s.sub("spread")))
		}
	default:
		return false
	}
	return true
}

// constraint reads a constraint block, checked as the servers check it.
func (p *parser) constraint(b *node, s scope) *structs.Constraint {
	c := &structs.Constraint{}
	c.Attribute, c.Operator, c.Value = p.comparison(b, s, constraintFields, nil)
	p.checkPlacement(b.line, s, []*structs.Constraint{c}, nil, nil)
	return c
}

// affinity reads an affinity block; its weight defaults to 50.
func (p *parser) affinity(b *node, s scope) *structs.Affinity {
	a := &structs.Affinity{Weight: structs.DefaultAffinityWeight}
	a.Attribute, a.Operator, a.Value = p.comparison(b, s, affinityFields, &a.Weight)
	p.checkPlacement(b.line, s, nil, []*structs.Affinity{a}, nil)
	return a
}

// comparison reads the attribute, operator and value a constraint or an
// affinity compares, and an affinity's weight (weight nil: the block
// takes none; fields are the block's, for a misspelt one).
func (p *parser) comparison(b *node, s scope, fields []string, weight *int) (attribute, operator, value string) {
	fs := newFields()
	for _, f := range b.fields {
		if f.val.kind == kindNull || !p.once(fs.seen, f, s) {
			continue
		}
		switch {
		case f.name == "attribute":
			attribute, _ = p.str(f, s)
		case f.name == "operator":
			operator, _ = p.oneOf(f, s, structs.ConstraintOperators)
		case f.name == "value":
			value, _ = p.scalar(f, s)
		case f.name == "weight" && weight != nil:
			*weight, _ = p.integer(f, s)
		default:
			fs.unknown(p, f, s, fields)
		}
	}
	return attribute, operator, value
}

// spread reads a spread block with its target "VALUE" { percent } blocks;
// its weight defaults to 50.
func (p *parser) spread(b *node, s scope) *structs.Spread {
	sp := &structs.Spread{Weight: structs.DefaultSpreadWeight}
	fs := newFields()
	for _, f := range b.fields {
		if f.val.kind == kindNull {
			continue
		}
		if f.name == "target" {
			value, ok := p.label(f, s)
			if !ok {
				continue
			}
			sp.Targets = append(sp.Targets, p.spreadTarget(f.val, value, s.labelled("target", value)))
			continue
		}
		if !p.once(fs.seen, f, s) {
			continue
		}
		switch f.name {
		case "attribute":
			sp.Attribute, _ = p.str(f, s)
		case "weight":
			sp.Weight, _ = p.integer(f, s)
		default:
			fs.unknown(p, f, s, spreadFields)
		}
	}
	p.checkPlacement(b.line, s, nil, nil, []*structs.Spread{sp})
	return sp
}

func (p *parser) spreadTarget(b *node, value string, s scope) structs.SpreadTarget {
	t := structs.SpreadTarget{Value: value}
	fs := newFields()
	for _, f := range b.fields {
		if f.val.kind == kindNull || !p.once(fs.seen, f, s) {
			continue
		}
		if f.name == "percent" {
			t.Percent, _ = p.integer(f, s)
			continue
		}
		fs.unknown(p, f, s, targetFields)
	}
	if !fs.has("percent") {
		p.missing(b.line, s, "percent", "give the share of the group's allocations for this value, e.g. percent = 50")
	}
	return t
}

// checkPlacement reports, at the block's line, what the servers would
// refuse of it.
func (p *parser) checkPlacement(line int, s scope, cs []*structs.Constraint, as []*structs.Affinity, ss []*structs.Spread) {
	if err := structs.ValidatePlacement(cs, as, ss); err != nil {
		p.badIn(line, s, "%v", err)
	}
}

// scalar reads a value that may be written as a string, a number or a
// bool ("4", 4, true), as text.
func (p *parser) scalar(f *field, s scope) (string, bool) {
	switch f.val.kind {
	case kindString, kindNumber:
		return f.val.str, true
	case kindBool:
		if f.val.b {
			return "true", true
		}
		return "false", true
	}
	p.bad(f.line, s, f.name, "must be a string, a number or a bool, not %s", f.val.describe())
	return "", false
}
