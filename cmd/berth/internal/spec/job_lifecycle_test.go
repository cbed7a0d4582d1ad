package spec

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// lifecycleJob is a job of type typ whose one group has the blocks given.
func lifecycleJob(typ, blocks string) string {
	return fmt.Sprintf(`job "web" {
  type = %q
  group "g" {
%s
    task "t" {
      driver = "exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
`, typ, blocks)
}

func TestParseJob_UpdateAndReschedule(t *testing.T) {
	job, err := ParseJob("web.hcl", []byte(lifecycleJob("service", `    update {
      max_parallel     = 2
      min_healthy_time = "30s"
    }
    reschedule {
      attempts       = 3
      interval       = "1h"
      delay_function = "constant"
    }`)))
	must.NoError(t, err)
	tg := job.TaskGroups[0]
	must.Eq(t, &structs.UpdateStrategy{MaxParallel: 2, MinHealthyTime: 30 * time.Second}, tg.Update)
	must.Eq(t, structs.UpdateStrategy{MaxParallel: 2, MinHealthyTime: 30 * time.Second, HealthyDeadline: 5 * time.Minute}, tg.UpdateStrategy())
	must.Eq(t, &structs.ReschedulePolicy{Attempts: 3, Interval: time.Hour, Delay: 30 * time.Second,
		DelayFunction: structs.DelayConstant, MaxDelay: time.Hour}, tg.Reschedule,
		must.Sprint("what the block leaves out is the service default; attempts is a limit"))
	must.NoError(t, job.Validate())

	job, err = ParseJob("web.hcl", []byte(lifecycleJob("batch", "    reschedule {\n      attempts = 0\n    }")))
	must.NoError(t, err)
	_, _, ok := (&structs.Allocation{ClientStatus: structs.AllocClientStatusFailed, DesiredStatus: structs.AllocDesiredStatusRun,
		FailTime: 1}).NextReschedule(job.TaskGroups[0].ReschedulePolicy(job.Type))
	must.False(t, ok, must.Sprint("attempts = 0 turns rescheduling off"))

	job, err = ParseJob("web.hcl", []byte(lifecycleJob("batch", "    reschedule {\n      unlimited = true\n    }")))
	must.NoError(t, err)
	must.True(t, job.TaskGroups[0].Reschedule.Unlimited)
	must.EqOp(t, 5*time.Second, job.TaskGroups[0].Reschedule.Delay, must.Sprint("the batch default"))
}

func TestParseJob_UpdateAndRescheduleErrors(t *testing.T) {
	cases := []struct {
		name, blocks string
		want         string
	}{
		{"max_parallel 0", "    update {\n      max_parallel = 0\n    }", `update: max_parallel must be 1 or more, not 0`},
		{"deadline 0", "    update {\n      healthy_deadline = \"0s\"\n    }", `update: healthy_deadline must be more than 0`},
		{"min healthy time 0", "    update {\n      min_healthy_time = \"0s\"\n    }",
			`group "g": update: min_healthy_time must be more than 0; leave it out for the default 10s`},
		{"misspelt update key", "    update {\n      max_paralel = 2\n    }", `unknown field "max_paralel"; did you mean "max_parallel"?`},
		{"bad delay function", "    reschedule {\n      delay_function = \"exponentail\"\n    }", `did you mean "exponential"?`},
		{"attempts without interval", "    reschedule {\n      attempts = 2\n      interval = \"0s\"\n    }",
			`attempts 2 needs an interval to count them in`},
		{"negative attempts", "    reschedule {\n      attempts = -1\n    }", `attempts must be 0 or more, not -1`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJob("web.hcl", []byte(lifecycleJob("service", tc.blocks)))
			must.ErrorContains(t, err, tc.want)
		})
	}
}

// The API's JSON gives an update field the block left out as 0 (the
// servers keep 0 for unset): a job read back from the API parses to the
// same update block, while a 0 written in HCL is refused (above).
func TestParseJob_APIJSON_UpdateLeftOutIsZero(t *testing.T) {
	src := `{"ID": "web", "Type": "service", "TaskGroups": [{"Name": "g",
  "Update": {"MaxParallel": 0, "MinHealthyTime": 30000000000, "HealthyDeadline": 0},
  "Tasks": [{"Name": "t", "Driver": "exec", "Config": {"command": "/bin/true"}}]}]}`
	job, err := ParseJob("web.json", []byte(src))
	must.NoError(t, err)
	must.Eq(t, &structs.UpdateStrategy{MinHealthyTime: 30 * time.Second}, job.TaskGroups[0].Update)

	written, err := ParseJob("web.hcl", []byte(lifecycleJob("service", "    update {\n      max_parallel = 2\n    }")))
	must.NoError(t, err)
	b, err := json.Marshal(written)
	must.NoError(t, err)
	read, err := ParseJob("web.json", b)
	must.NoError(t, err)
	must.Eq(t, written.TaskGroups[0].Update, read.TaskGroups[0].Update)

	_, err = ParseJob("web.json", []byte(`{"ID": "web", "Type": "service", "TaskGroups": [{"Name": "g",
  "Update": {"MinHealthyTime": "0s"},
  "Tasks": [{"Name": "t", "Driver": "exec", "Config": {"command": "/bin/true"}}]}]}`))
	must.ErrorContains(t, err, `update: min_healthy_time must be more than 0`,
		must.Sprint("a 0 written as a duration string is written, not read back"))
}
