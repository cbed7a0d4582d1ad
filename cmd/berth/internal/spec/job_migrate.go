package spec

import "github.com/berth-csi/berth/structs"

var (
	migrateKeys   = []string{"max_parallel"}
	pascalMigrate = map[string]string{"MaxParallel": "max_parallel"}
)

// migrate reads a group's migrate block: how a node drain moves the
// group's allocations. max_parallel defaults to 1, as Nomad's.
func (p *parser) migrate(b *node, s scope) *structs.MigrateStrategy {
	m := &structs.MigrateStrategy{MaxParallel: structs.DefaultMigrateMaxParallel}
	seen := map[string]int{}
	for _, f := range b.fields {
		if f.val.kind == kindNull || !p.once(seen, f, s) {
			continue
		}
		switch f.name {
		case "max_parallel":
			n, ok := p.integer(f, s)
			if !ok {
				continue
			}
			if n < 1 {
				p.bad(f.line, s, "max_parallel", "must be 1 or more, not %d: how many of the group's allocations a drain moves at once", n)
				continue
			}
			m.MaxParallel = n
		default:
			p.unknown(f, s, migrateKeys)
		}
	}
	return m
}
