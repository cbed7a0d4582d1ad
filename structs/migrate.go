package structs

// DefaultMigrateMaxParallel is migrate { max_parallel }'s default, as
// Nomad's.
const DefaultMigrateMaxParallel = 1

// MigrateStrategy is a group's `migrate` block: how a node drain moves
// the group's allocations off the node.
type MigrateStrategy struct {
	// MaxParallel is how many of the group's allocations a drain has in
	// flight at once: stopped on a draining node, their replacement not
	// yet running.
	MaxParallel int
}

// MigrateMaxParallel is the group's migrate { max_parallel }, its default
// when unset.
func (tg *TaskGroup) MigrateMaxParallel() int {
	if tg == nil || tg.Migrate == nil || tg.Migrate.MaxParallel < 1 {
		return DefaultMigrateMaxParallel
	}
	return tg.Migrate.MaxParallel
}

func (tg *TaskGroup) validateMigrate(p *problems, at string) {
	if m := tg.Migrate; m != nil && m.MaxParallel < 0 {
		p.add("%smigrate: max_parallel %d must be 1 or more (0 is the default, %d)", at, m.MaxParallel, DefaultMigrateMaxParallel)
	}
}
