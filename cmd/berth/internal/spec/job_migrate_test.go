package spec

import (
	"errors"
	"testing"

	"github.com/shoenig/test/must"
)

func TestParseJob_Migrate(t *testing.T) {
	job, err := ParseJob("web.hcl", []byte(jobWith("migrate {\n      max_parallel = 3\n    }", "", "")))
	must.NoError(t, err)
	must.EqOp(t, 3, job.TaskGroups[0].Migrate.MaxParallel)
	must.EqOp(t, 3, job.TaskGroups[0].MigrateMaxParallel())

	job, err = ParseJob("web.hcl", []byte(jobWith("migrate {}", "", "")))
	must.NoError(t, err)
	must.EqOp(t, 1, job.TaskGroups[0].Migrate.MaxParallel, must.Sprint("Nomad's default"))

	job, err = ParseJob("web.hcl", []byte(jobWith("", "", "")))
	must.NoError(t, err)
	must.Nil(t, job.TaskGroups[0].Migrate)
	must.EqOp(t, 1, job.TaskGroups[0].MigrateMaxParallel())

	job, err = ParseJob("web.json", []byte(`{"ID": "web", "TaskGroups": [{"Name": "db", "Migrate": {"MaxParallel": 2},
  "Tasks": [{"Name": "t", "Driver": "exec", "Config": {"command": "/bin/true"}}]}]}`))
	must.NoError(t, err)
	must.EqOp(t, 2, job.TaskGroups[0].Migrate.MaxParallel)
}

func TestParseJob_MigrateErrors(t *testing.T) {
	cases := []struct {
		name, src, field, msg string
	}{
		{"zero", jobWith("migrate { max_parallel = 0 }", "", ""), "group[db].migrate.max_parallel",
			`web.hcl:3: group "db": migrate: max_parallel must be 1 or more, not 0`},
		{"misspelt", jobWith("migrate { max_paralel = 2 }", "", ""), "group[db].migrate.max_paralel",
			`unknown field "max_paralel"; did you mean "max_parallel"?`},
		{"as a string", jobWith(`migrate { max_parallel = "2" }`, "", ""), "group[db].migrate.max_parallel",
			`max_parallel must be`},
		{"misspelt block", jobWith("migrte { max_parallel = 2 }", "", ""), "group[db].migrte",
			`unknown field "migrte"; did you mean "migrate"?`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseJob("web.hcl", []byte(c.src))
			var e *Error
			must.True(t, errors.As(err, &e), must.Sprintf("%v", err))
			must.EqOp(t, c.field, e.Field)
			must.StrContains(t, e.Error(), c.msg)
		})
	}
}
