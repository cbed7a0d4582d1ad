package spec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// TestParseJob_Resources: a task's resources block is read as the servers
// take it, in HCL and in the API's JSON; left out, the task has the
// defaults; what the servers would refuse, the parser refuses at its line.
func TestParseJob_Resources(t *testing.T) {
	job, err := ParseJob("web.hcl", []byte(jobWith("", "", `resources {
        cpu        = 500
        memory     = 256
        memory_max = 512
      }`)))
	must.NoError(t, err)
	task := job.TaskGroups[0].Tasks[0]
	must.Eq(t, &structs.Resources{CPU: 500, MemoryMB: 256, MemoryMaxMB: 512}, task.Resources)
	must.NoError(t, job.Validate())

	js, err := ParseJob("web.json", []byte(`{"ID": "web", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "exec",
		"Config": {"command": "/bin/true"}, "Resources": {"Cores": 2, "MemoryMB": 1024}}]}]}`))
	must.NoError(t, err)
	must.Eq(t, &structs.Resources{Cores: 2, MemoryMB: 1024}, js.TaskGroups[0].Tasks[0].Resources)

	job, err = ParseJob("web.hcl", []byte(jobWith("", "", "")))
	must.NoError(t, err)
	must.Eq(t, structs.Resources{CPU: structs.DefaultTaskCPU, MemoryMB: structs.DefaultTaskMemoryMB},
		job.TaskGroups[0].Tasks[0].ResourcesOrDefault())

	for _, tc := range []struct{ name, block, want string }{
		{"cpu and cores", "cpu = 100\n        cores = 1", "cpu and cores are two ways to ask for CPU: give one"},
		{"memory_max under memory", "memory = 512\n        memory_max = 256", "memory_max 256 MiB must be at least memory (512 MiB)"},
		{"tiny memory", "memory = 4", "memory 4 MiB is under the least a task may have, 10 MiB"},
		{"zero", "cpu = 0", "cpu must be more than 0, not 0; leave it out for the default"},
		{"unknown", "memry = 64", `unknown field "memry"; did you mean "memory"?`},
		{"quoted", `memory = "64"`, "must be a whole number, not a string; leave out the quotes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJob("web.hcl", []byte(jobWith("", "", "resources {\n        "+tc.block+"\n      }")))
			must.Error(t, err)
			must.StrContains(t, err.Error(), `group "db": task "server": resources`)
			must.StrContains(t, err.Error(), tc.want)
		})
	}
}

// TestJobValidate_Resources: the servers refuse the same from a JSON job
// sent to the API, naming the group and task.
func TestJobValidate_Resources(t *testing.T) {
	job, err := ParseJob("web.hcl", []byte(jobWith("", "", "")))
	must.NoError(t, err)
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, Cores: 1, MemoryMB: 64, MemoryMaxMB: 32}
	err = job.Validate()
	must.Error(t, err)
	for _, want := range []string{`group "db": task "server": resources: cpu and cores`, "memory_max 32 MiB must be at least memory (64 MiB)"} {
		must.True(t, strings.Contains(err.Error(), want), must.Sprintf("%v lacks %q", err, want))
	}
}

// TestParseJob_Placement: constraint, affinity and spread blocks at job
// and group level, ${...} kept for the scheduler, defaults filled; the API's
// JSON of the parsed job reads back the same; what the servers would
// refuse, the parser refuses.
func TestParseJob_Placement(t *testing.T) {
	src := `job "web" {
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  constraint {
    operator = "distinct_hosts"
    value    = true
  }
  group "db" {
    constraint {
      attribute = "${meta.storage}"
      operator  = "set_contains"
      value     = "nvme,${meta.tier}"
    }
    affinity {
      attribute = "${node.datacenter}"
      value     = "dc1"
      weight    = -40
    }
    affinity {
      attribute = "${attr.cpu.numcores}"
      operator  = ">="
      value     = 8
    }
    spread {
      attribute = "${meta.rack}"
      target "r1" {
        percent = 70
      }
      target "r2" {
        percent = 30
      }
    }
    task "server" {
      driver = "exec"
      config { command = "/bin/sh" }
    }
  }
}
`
	job, err := ParseJob("web.hcl", []byte(src))
	must.NoError(t, err)
	must.Eq(t, []*structs.Constraint{{Attribute: "${attr.kernel.name}", Value: "linux"},
		{Operator: "distinct_hosts", Value: "true"}}, job.Constraints)
	tg := job.TaskGroups[0]
	must.Eq(t, []*structs.Constraint{{Attribute: "${meta.storage}", Operator: "set_contains", Value: "nvme,${meta.tier}"}}, tg.Constraints)
	must.Eq(t, []*structs.Affinity{{Attribute: "${node.datacenter}", Value: "dc1", Weight: -40},
		{Attribute: "${attr.cpu.numcores}", Operator: ">=", Value: "8", Weight: structs.DefaultAffinityWeight}}, tg.Affinities)
	must.Eq(t, []*structs.Spread{{Attribute: "${meta.rack}", Weight: structs.DefaultSpreadWeight,
		Targets: []structs.SpreadTarget{{Value: "r1", Percent: 70}, {Value: "r2", Percent: 30}}}}, tg.Spreads)
	must.NoError(t, job.Validate())

	js, err := json.Marshal(job)
	must.NoError(t, err)
	again, err := ParseJob("web.json", js)
	must.NoError(t, err)
	must.Eq(t, job.Constraints, again.Constraints)
	must.Eq(t, tg.Affinities, again.TaskGroups[0].Affinities)
	must.Eq(t, tg.Spreads, again.TaskGroups[0].Spreads)

	for _, tc := range []struct{ name, block, want string }{
		{"operator", "constraint {\n    attribute = \"${meta.a}\"\n    operator  = \"~=\"\n  }", `operator "~=" is not valid; one of "="`},
		{"attribute", "constraint {\n    attribute = \"${nodes.name}\"\n    value = \"x\"\n  }", `attribute "${nodes.name}" is not one berth knows`},
		{"regexp", "constraint {\n    attribute = \"${meta.a}\"\n    operator  = \"regexp\"\n    value = \"(\"\n  }", "is not a regular expression"},
		{"weight", "affinity {\n    attribute = \"${meta.a}\"\n    value = \"x\"\n    weight = 200\n  }", "affinity weight 200 must be from -100 to 100"},
		{"percents", "spread {\n    attribute = \"${meta.a}\"\n    target \"x\" {\n      percent = 80\n    }\n    target \"y\" {\n      percent = 40\n    }\n  }",
			"spread targets' percents add up to 120, over 100"},
		{"function", "constraint {\n    attribute = \"${upper(meta.a)}\"\n  }", "variables and functions are not allowed here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJob("web.hcl", []byte(jobWith(tc.block, "", "")))
			must.Error(t, err)
			must.StrContains(t, err.Error(), tc.want)
		})
	}
}
