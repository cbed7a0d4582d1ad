package spec

import "github.com/berth-csi/berth/structs"

var (
	updateKeys   = []string{"max_parallel", "min_healthy_time", "healthy_deadline"}
	pascalUpdate = map[string]string{"MaxParallel": "max_parallel", "MinHealthyTime": "min_healthy_time",
		"HealthyDeadline": "healthy_deadline"}
)

// update reads a group's update block: how a change of the group replaces
// its allocations. What it leaves out keeps Nomad's default
// (structs.TaskGroup.UpdateStrategy); the servers check the whole.
func (p *parser) update(b *node, s scope) *structs.UpdateStrategy {
	u := &structs.UpdateStrategy{}
	seen := map[string]int{}
	for _, f := range b.fields {
		if f.val.kind == kindNull || !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "max_parallel":
			if n, ok := p.maxParallel(f, s, "are replaced at once"); ok {
				u.MaxParallel = n
			}
		case "min_healthy_time":
			u.MinHealthyTime, _ = p.duration(f, s)
		case "healthy_deadline":
			if d, ok := p.duration(f, s); ok {
				if d == 0 {
					p.bad(f.line, s, f.name, "must be more than 0: how long a replacement has to become healthy")
					continue
				}
				u.HealthyDeadline = d
			}
		default:
			p.unknown(f, s, updateKeys)
		}
	}
	return u
}

// maxParallel reads an update's or migrate's max_parallel: 1 or more, how
// many of the group's allocations what does.
func (p *parser) maxParallel(f *field, s scope, what string) (int, bool) {
	n, ok := p.integer(f, s)
	if !ok {
		return 0, false
	}
	if n < 1 {
		p.bad(f.line, s, "max_parallel", "must be 1 or more, not %d: how many of the group's allocations %s", n, what)
		return 0, false
	}
	return n, true
}
