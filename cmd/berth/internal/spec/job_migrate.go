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
			if n, ok := p.maxParallel(f, s, "a drain moves at once"); ok {
				m.MaxParallel = n
			}
		default:
			p.unknown(f, s, migrateKeys)
		}
	}
	return m
}
