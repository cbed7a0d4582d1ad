package structs

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestTaskGroup_MigrateMaxParallel(t *testing.T) {
	tg := &TaskGroup{}
	must.EqOp(t, DefaultMigrateMaxParallel, tg.MigrateMaxParallel())
	tg.Migrate = &MigrateStrategy{}
	must.EqOp(t, DefaultMigrateMaxParallel, tg.MigrateMaxParallel(), must.Sprint("0 is the default"))
	tg.Migrate.MaxParallel = 4
	must.EqOp(t, 4, tg.MigrateMaxParallel())
	c := tg.Copy()
	c.Migrate.MaxParallel = 5
	must.EqOp(t, 4, tg.Migrate.MaxParallel, must.Sprint("Copy copies the block"))

	j := validJob()
	j.TaskGroups[0].Migrate = &MigrateStrategy{MaxParallel: -1}
	err := j.Validate()
	must.ErrorIs(t, err, ErrBadRequest)
	must.StrContains(t, err.Error(), "migrate: max_parallel -1 must be 1 or more")
}
