package spec

import (
	"time"

	"github.com/berth-csi/berth/structs"
)

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
		if f.val.kind == kindNull || p.zeroInAPI(f) || !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "max_parallel":
			if n, ok := p.maxParallel(f, s, "are replaced at once"); ok {
				u.MaxParallel = n
			}
		case "min_healthy_time":
			if d, ok := p.updateDuration(f, s, "must be more than 0; leave it out for the default "+structs.DefaultUpdateMinHealthyTime.String()); ok {
				u.MinHealthyTime = d
			}
		case "healthy_deadline":
			if d, ok := p.updateDuration(f, s, "must be more than 0: how long a replacement has to become healthy"); ok {
				u.HealthyDeadline = d
			}
		default:
			p.unknown(f, s, updateKeys)
		}
	}
	return u
}

// updateDuration reads an update duration, which must be more than 0: the
// servers take 0 for unset and use the default, so a 0 written is refused
// with the message zero rather than silently replaced.
func (p *parser) updateDuration(f *field, s scope, zero string) (time.Duration, bool) {
	d, ok := p.duration(f, s)
	if ok && d == 0 {
		p.bad(f.line, s, f.name, "%s", zero)
		return 0, false
	}
	return d, ok
}

// zeroInAPI reports an update field the API's JSON gives as 0: that is
// how a field the job's update block left out reads back (the servers
// keep 0 for unset), so a job read from the API runs again as it was.
func (p *parser) zeroInAPI(f *field) bool {
	return p.pascal && f.val.kind == kindNumber && f.val.str == "0"
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
