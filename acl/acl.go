package acl

import (
	"sort"
	"strings"
)

// level orders a scope's policies; deny is kept apart, since it wins over
// any level.
type level int

const (
	levelNone level = iota
	levelList
	levelRead
	levelWrite
)

func levelOf(policy string) level {
	switch policy {
	case PolicyList:
		return levelList
	case PolicyRead:
		return levelRead
	case PolicyWrite:
		return levelWrite
	}
	return levelNone
}

// scope is the merged policy of node, plugin or operator.
type scope struct {
	deny  bool
	level level
}

func (s *scope) merge(policy string) {
	if policy == PolicyDeny {
		s.deny = true
		return
	}
	s.level = max(s.level, levelOf(policy))
}

func (s scope) allows(l level) bool { return !s.deny && s.level >= l }

// nsRule is the merged rule of one namespace name or glob.
type nsRule struct {
	pattern string
	deny    bool
	caps    map[string]bool
}

// ACL is what a token may do: its policies compiled and merged. The zero
// value (and an ACL compiled from no policy) allows nothing. An ACL is
// immutable and safe for concurrent use.
type ACL struct {
	management bool
	exact      map[string]*nsRule
	globs      []*nsRule // the most specific (most literal characters) first
	node       scope
	plugin     scope
	operator   scope
}

// ManagementACL allows everything.
var ManagementACL = &ACL{management: true}

// DenyAll allows nothing: anonymous callers when no anonymous policy exists.
var DenyAll = &ACL{}

// Compile merges policies into one ACL: per namespace (name or glob) and
// per scope, the most permissive of the policies, except that a deny in
// any of them wins there.
func Compile(policies ...*Policy) *ACL {
	a := &ACL{exact: map[string]*nsRule{}}
	globs := map[string]*nsRule{}
	for _, p := range policies {
		if p == nil {
			continue
		}
		for _, ns := range p.Namespaces {
			set := a.exact
			if strings.Contains(ns.Name, "*") {
				set = globs
			}
			r := set[ns.Name]
			if r == nil {
				r = &nsRule{pattern: ns.Name, caps: map[string]bool{}}
				set[ns.Name] = r
			}
			r.deny = r.deny || ns.Deny
			for _, c := range ns.Capabilities {
				r.caps[c] = true
			}
		}
		a.node.merge(p.Node)
		a.plugin.merge(p.Plugin)
		a.operator.merge(p.Operator)
	}
	for _, r := range globs {
		a.globs = append(a.globs, r)
	}
	sort.Slice(a.globs, func(i, j int) bool {
		li, lj := literalLen(a.globs[i].pattern), literalLen(a.globs[j].pattern)
		if li != lj {
			return li > lj
		}
		return a.globs[i].pattern < a.globs[j].pattern
	})
	return a
}

func literalLen(pattern string) int { return len(pattern) - strings.Count(pattern, "*") }

// IsManagement reports whether the ACL allows everything.
func (a *ACL) IsManagement() bool { return a != nil && a.management }

// rule finds the rule that applies to namespace ns: its exact rule, else
// the most specific glob that matches it, else none.
func (a *ACL) rule(ns string) *nsRule {
	if r, ok := a.exact[ns]; ok {
		return r
	}
	for _, r := range a.globs {
		if globMatch(r.pattern, ns) {
			return r
		}
	}
	return nil
}

// AllowNamespaceOperation reports whether the ACL grants capability cap
// in namespace ns.
func (a *ACL) AllowNamespaceOperation(ns, cap string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	r := a.rule(ns)
	return r != nil && !r.deny && r.caps[cap]
}

// AllowNamespace reports whether the ACL grants any capability in
// namespace ns: whether the namespace is visible at all.
func (a *ACL) AllowNamespace(ns string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	r := a.rule(ns)
	return r != nil && !r.deny && len(r.caps) > 0
}

// AllowNodeRead reports whether the ACL may read nodes.
func (a *ACL) AllowNodeRead() bool { return a.IsManagement() || a != nil && a.node.allows(levelRead) }

// AllowNodeWrite reports whether the ACL may change nodes as an operator.
func (a *ACL) AllowNodeWrite() bool { return a.IsManagement() || a != nil && a.node.allows(levelWrite) }

// AllowPluginList reports whether the ACL may list CSI plugins.
func (a *ACL) AllowPluginList() bool {
	return a.IsManagement() || a != nil && a.plugin.allows(levelList)
}

// AllowPluginRead reports whether the ACL may read a CSI plugin.
func (a *ACL) AllowPluginRead() bool {
	return a.IsManagement() || a != nil && a.plugin.allows(levelRead)
}

// AllowPluginWrite reports whether the ACL may run a CSI plugin (a job
// with a csi_plugin task). A plugin ID is cluster-wide: whoever runs a
// plugin serves every namespace's volumes under it, their secrets
// included, so running one is a cluster permission, not a namespace's.
func (a *ACL) AllowPluginWrite() bool {
	return a.IsManagement() || a != nil && a.plugin.allows(levelWrite)
}

// AllowOperatorRead reports whether the ACL may read the cluster's
// configuration (raft peers, members).
func (a *ACL) AllowOperatorRead() bool {
	return a.IsManagement() || a != nil && a.operator.allows(levelRead)
}

// AllowOperatorWrite reports whether the ACL may change the cluster
// (snapshots, raft peers, plugins left behind).
func (a *ACL) AllowOperatorWrite() bool {
	return a.IsManagement() || a != nil && a.operator.allows(levelWrite)
}

// globMatch reports whether name matches pattern, in which '*' matches
// any run of characters (none included) and everything else itself.
func globMatch(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return len(name) >= len(last) && strings.HasSuffix(name, last)
}
