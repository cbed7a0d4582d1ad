package acl

import (
	"errors"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestParse_Valid(t *testing.T) {
	pol, err := Parse(`
namespace "default" {
  policy       = "read"
  capabilities = ["submit-job"]
}
namespace "team-*" {
  capabilities = ["csi-mount-volume", "deny"]
}
node {
  policy = "write"
}
plugin {
  policy = "list"
}
operator {
  policy = "read"
}
`)
	must.NoError(t, err)
	must.Len(t, 2, pol.Namespaces)
	must.Eq(t, &NamespaceRule{Name: "default", Policy: "read",
		Capabilities: []string{CapCSIListVolume, CapCSIReadVolume, CapReadJob, CapSubmitJob}}, pol.Namespaces[0])
	must.Eq(t, &NamespaceRule{Name: "team-*", Capabilities: []string{CapCSIMountVolume}, Deny: true}, pol.Namespaces[1])
	must.Eq(t, PolicyWrite, pol.Node)
	must.Eq(t, PolicyList, pol.Plugin)
	must.Eq(t, PolicyRead, pol.Operator)
}

func TestParse_PluginPolicies(t *testing.T) {
	for _, policy := range []string{PolicyDeny, PolicyList, PolicyRead, PolicyWrite} {
		t.Run(policy, func(t *testing.T) {
			pol, err := Parse("plugin {\n  policy = \"" + policy + "\"\n}\n")
			must.NoError(t, err)
			must.Eq(t, policy, pol.Plugin)
		})
	}
}

func TestParse_Expansion(t *testing.T) {
	cases := []struct {
		policy string
		want   []string
	}{
		{"read", []string{CapCSIListVolume, CapCSIReadVolume, CapReadJob}},
		{"write", []string{CapCSIListVolume, CapCSIMountVolume, CapCSIReadVolume, CapCSIRegisterPlugin,
			CapCSIWriteVolume, CapReadJob, CapReadLogs, CapSubmitJob}},
		{"deny", nil},
	}
	for _, tc := range cases {
		t.Run(tc.policy, func(t *testing.T) {
			pol, err := Parse("namespace \"default\" {\n  policy = \"" + tc.policy + "\"\n}\n")
			must.NoError(t, err)
			must.Eq(t, tc.want, pol.Namespaces[0].Capabilities)
			must.Eq(t, tc.policy == "deny", pol.Namespaces[0].Deny)
		})
	}
}

func TestParse_Errors(t *testing.T) {
	cases := []struct {
		name  string
		rules string
		want  []string
	}{
		{"unknown capability", "namespace \"default\" {\n  policy = \"read\"\n  capabilities = [\"submit-jobs\"]\n}\n",
			[]string{`line 3`, `unknown capability "submit-jobs"`, `did you mean "submit-job"?`}},
		{"unknown namespace policy", "namespace \"default\" {\n  policy = \"wrte\"\n}\n",
			[]string{`line 2`, `unknown policy "wrte"`, `did you mean "write"?`}},
		{"unknown node policy", "node {\n  policy = \"list\"\n}\n",
			[]string{`line 2`, `node: unknown policy "list"`, `deny, read, write`}},
		{"unknown plugin policy", "plugin {\n  policy = \"wirte\"\n}\n",
			[]string{`line 2`, `plugin: unknown policy "wirte"`, `did you mean "write"?`, `deny, list, read, write`}},
		{"unknown block", "nodes {\n  policy = \"read\"\n}\n",
			[]string{`line 1`, `Unsupported block type`, `"node"`}},
		{"unknown argument", "node {\n  polic = \"read\"\n}\n",
			[]string{`line 2`, `Unsupported argument`}},
		{"syntax", "namespace \"default\" {\n  policy = \n}\n", []string{`line 2`}},
		{"empty", "  \n", []string{"empty"}},
		{"namespace without rules", "namespace \"default\" {\n}\n", []string{"line 1", "give a policy"}},
		{"capabilities not a list", "namespace \"default\" {\n  capabilities = \"read-job\"\n}\n",
			[]string{"line 2", "capabilities must be a list of strings"}},
		{"duplicate namespace", "namespace \"a\" {\n  policy = \"read\"\n}\nnamespace \"a\" {\n  policy = \"write\"\n}\n",
			[]string{"line 4", `namespace "a" is given twice (first on line 1)`}},
		{"bad namespace name", "namespace \"a/b\" {\n  policy = \"read\"\n}\n", []string{"line 1", `must not contain '/'`}},
		{"duplicate node block", "node {\n  policy = \"read\"\n}\nnode {\n  policy = \"write\"\n}\n",
			[]string{"line 4", "Duplicate node block"}},
		{"two problems", "node {\n  policy = \"x\"\n}\noperator {\n  policy = \"y\"\n}\n",
			[]string{"line 2", "line 5"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.rules)
			must.Error(t, err)
			must.True(t, errors.Is(err, structs.ErrBadRequest))
			for _, w := range tc.want {
				must.StrContains(t, err.Error(), w)
			}
		})
	}
}

func TestParse_TooLarge(t *testing.T) {
	big := make([]byte, maxRulesSize+1)
	for i := range big {
		big[i] = ' '
	}
	_, err := Parse(string(big))
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.StrContains(t, err.Error(), "the most is")
}
