package spec

import "github.com/berth-csi/berth/structs"

var (
	rescheduleKeys   = []string{"attempts", "interval", "delay", "delay_function", "max_delay", "unlimited"}
	pascalReschedule = map[string]string{"Attempts": "attempts", "Interval": "interval", "Delay": "delay",
		"DelayFunction": "delay_function", "MaxDelay": "max_delay", "Unlimited": "unlimited"}
)

// reschedule reads a group's reschedule block over the job type's
// defaults (structs.DefaultReschedulePolicy), so that the stored block is
// whole: attempts alone is a limit (unlimited off); unlimited = true keeps
// no limit; attempts = 0 turns rescheduling off.
func (p *parser) reschedule(b *node, s scope, jobType string) *structs.ReschedulePolicy {
	r := structs.DefaultReschedulePolicy(jobType)
	seen := map[string]int{}
	unlimitedSet := false
	for _, f := range b.fields {
		if f.val.kind == kindNull || !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "attempts":
			n, ok := p.integer(f, s)
			if !ok {
				continue
			}
			if n < 0 {
				p.bad(f.line, s, f.name, "must be 0 or more, not %d: how many replacements in interval (0: none)", n)
				continue
			}
			r.Attempts = n
			if !unlimitedSet {
				r.Unlimited = false
			}
		case "unlimited":
			if v, ok := p.boolean(f, s); ok {
				r.Unlimited, unlimitedSet = v, true
			}
		case "interval":
			r.Interval, _ = p.duration(f, s)
		case "delay":
			r.Delay, _ = p.duration(f, s)
		case "max_delay":
			r.MaxDelay, _ = p.duration(f, s)
		case "delay_function":
			if v, ok := p.oneOf(f, s, structs.DelayFunctions); ok {
				r.DelayFunction = v
			}
		default:
			p.unknown(f, s, rescheduleKeys)
		}
	}
	if r.Unlimited {
		r.Attempts = 0
	} else if r.Attempts > 0 && r.Interval == 0 {
		p.badIn(b.line, s, "attempts %d needs an interval to count them in, e.g. interval = \"24h\"", r.Attempts)
	}
	return &r
}
