package acl

import (
	"testing"

	"github.com/shoenig/test/must"
)

func mustParse(t *testing.T, rules string) *Policy {
	t.Helper()
	p, err := Parse(rules)
	must.NoError(t, err)
	return p
}

func TestACL_NamespaceOperation(t *testing.T) {
	readDefault := mustParse(t, "namespace \"default\" {\n  policy = \"read\"\n}\n")
	writeDefault := mustParse(t, "namespace \"default\" {\n  policy = \"write\"\n}\n")
	denyDefault := mustParse(t, "namespace \"default\" {\n  policy = \"deny\"\n}\n")
	denyCap := mustParse(t, "namespace \"default\" {\n  capabilities = [\"deny\"]\n}\n")
	globWrite := mustParse(t, "namespace \"*\" {\n  policy = \"write\"\n}\n")
	teamRead := mustParse(t, "namespace \"team-*\" {\n  policy = \"read\"\n}\n")
	mountOnly := mustParse(t, "namespace \"default\" {\n  capabilities = [\"csi-mount-volume\"]\n}\n")

	cases := []struct {
		name     string
		policies []*Policy
		ns, cap  string
		want     bool
	}{
		{"no policy", nil, "default", CapReadJob, false},
		{"read reads", []*Policy{readDefault}, "default", CapReadJob, true},
		{"read lists volumes", []*Policy{readDefault}, "default", CapCSIListVolume, true},
		{"read does not submit", []*Policy{readDefault}, "default", CapSubmitJob, false},
		{"read does not read logs", []*Policy{readDefault}, "default", CapReadLogs, false},
		{"read is for its namespace", []*Policy{readDefault}, "other", CapReadJob, false},
		{"write submits", []*Policy{writeDefault}, "default", CapSubmitJob, true},
		{"write mounts", []*Policy{writeDefault}, "default", CapCSIMountVolume, true},
		{"write reads logs", []*Policy{writeDefault}, "default", CapReadLogs, true},
		{"merge: most permissive", []*Policy{readDefault, writeDefault}, "default", CapSubmitJob, true},
		{"merge: deny wins", []*Policy{writeDefault, denyDefault}, "default", CapReadJob, false},
		{"merge: deny capability wins", []*Policy{denyCap, writeDefault}, "default", CapReadJob, false},
		{"merge: capabilities add up", []*Policy{readDefault, mountOnly}, "default", CapCSIMountVolume, true},
		{"glob matches any", []*Policy{globWrite}, "anything", CapSubmitJob, true},
		{"exact beats glob", []*Policy{globWrite, readDefault}, "default", CapSubmitJob, false},
		{"glob still applies elsewhere", []*Policy{globWrite, readDefault}, "prod", CapSubmitJob, true},
		{"more specific glob wins", []*Policy{globWrite, teamRead}, "team-a", CapSubmitJob, false},
		{"more specific glob reads", []*Policy{globWrite, teamRead}, "team-a", CapReadJob, true},
		{"glob does not match", []*Policy{teamRead}, "prod", CapReadJob, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := Compile(tc.policies...)
			must.Eq(t, tc.want, a.AllowNamespaceOperation(tc.ns, tc.cap))
			must.False(t, a.IsManagement())
		})
	}
}

func TestACL_Scopes(t *testing.T) {
	nodeRead := mustParse(t, "node {\n  policy = \"read\"\n}\n")
	nodeWrite := mustParse(t, "node {\n  policy = \"write\"\n}\n")
	nodeDeny := mustParse(t, "node {\n  policy = \"deny\"\n}\n")
	pluginList := mustParse(t, "plugin {\n  policy = \"list\"\n}\n")
	pluginRead := mustParse(t, "plugin {\n  policy = \"read\"\n}\n")
	pluginWrite := mustParse(t, "plugin {\n  policy = \"write\"\n}\n")
	pluginDeny := mustParse(t, "plugin {\n  policy = \"deny\"\n}\n")
	opRead := mustParse(t, "operator {\n  policy = \"read\"\n}\n")
	opWrite := mustParse(t, "operator {\n  policy = \"write\"\n}\n")

	type allows struct{ nodeR, nodeW, plugL, plugR, plugW, opR, opW bool }
	cases := []struct {
		name     string
		policies []*Policy
		want     allows
	}{
		{"none", nil, allows{}},
		{"node read", []*Policy{nodeRead}, allows{nodeR: true}},
		{"node write", []*Policy{nodeWrite}, allows{nodeR: true, nodeW: true}},
		{"node deny wins", []*Policy{nodeWrite, nodeDeny}, allows{}},
		{"plugin list", []*Policy{pluginList}, allows{plugL: true}},
		{"plugin read", []*Policy{pluginRead}, allows{plugL: true, plugR: true}},
		{"plugin write", []*Policy{pluginWrite}, allows{plugL: true, plugR: true, plugW: true}},
		{"plugin write merged with read", []*Policy{pluginRead, pluginWrite}, allows{plugL: true, plugR: true, plugW: true}},
		{"plugin deny wins over write", []*Policy{pluginWrite, pluginDeny}, allows{}},
		{"namespace write grants no plugin write", []*Policy{mustParse(t, "namespace \"*\" {\n  policy = \"write\"\n}\n")}, allows{}},
		{"operator read", []*Policy{opRead}, allows{opR: true}},
		{"operator write", []*Policy{opRead, opWrite}, allows{opR: true, opW: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := Compile(tc.policies...)
			got := allows{a.AllowNodeRead(), a.AllowNodeWrite(), a.AllowPluginList(), a.AllowPluginRead(),
				a.AllowPluginWrite(), a.AllowOperatorRead(), a.AllowOperatorWrite()}
			must.Eq(t, tc.want, got)
		})
	}
}

func TestACL_ManagementAndNil(t *testing.T) {
	m := ManagementACL
	must.True(t, m.IsManagement())
	must.True(t, m.AllowNamespaceOperation("any", CapSubmitJob))
	must.True(t, m.AllowNamespace("any"))
	must.True(t, m.AllowNodeWrite() && m.AllowPluginRead() && m.AllowPluginWrite() && m.AllowOperatorWrite())

	var none *ACL
	must.False(t, none.IsManagement())
	must.False(t, none.AllowNamespaceOperation("default", CapReadJob))
	must.False(t, none.AllowNamespace("default"))
	must.False(t, none.AllowNodeRead() || none.AllowPluginList() || none.AllowPluginWrite() || none.AllowOperatorRead())
	must.False(t, DenyAll.AllowNamespace("default") || DenyAll.AllowNodeRead())
}

func TestACL_AllowNamespace(t *testing.T) {
	a := Compile(mustParse(t, "namespace \"default\" {\n  policy = \"read\"\n}\nnamespace \"secret\" {\n  policy = \"deny\"\n}\n"))
	must.True(t, a.AllowNamespace("default"))
	must.False(t, a.AllowNamespace("secret"))
	must.False(t, a.AllowNamespace("other"))
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"*", "abc", true},
		{"a*", "abc", true},
		{"a*", "bac", false},
		{"*c", "abc", true},
		{"a*c", "ac", true},
		{"a*c", "abdc", true},
		{"a*b*c", "axbyc", true},
		{"a*b*c", "axcyb", false},
		{"ab*ba", "aba", false},
		{"abc", "abc", true},
		{"abc", "abd", false},
	}
	for _, tc := range cases {
		t.Run(tc.pattern+"~"+tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, globMatch(tc.pattern, tc.name))
		})
	}
}
