package structs

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Constraint operators (`constraint { operator }`), Nomad's.
const (
	ConstraintEqual          = "="
	ConstraintNotEqual       = "!="
	ConstraintLess           = "<"
	ConstraintLessEqual      = "<="
	ConstraintGreater        = ">"
	ConstraintGreaterEqual   = ">="
	ConstraintRegexp         = "regexp"
	ConstraintSetContains    = "set_contains"
	ConstraintSetContainsAny = "set_contains_any"
	ConstraintIsSet          = "is_set"
	ConstraintIsNotSet       = "is_not_set"
	// ConstraintDistinctHosts puts no two of the job's (at job level) or
	// the group's (at group level) allocations on one node.
	ConstraintDistinctHosts = "distinct_hosts"
)

// ConstraintOperators lists the operators a constraint may use, in the
// order messages name them.
var ConstraintOperators = []string{ConstraintEqual, ConstraintNotEqual, ConstraintLess, ConstraintLessEqual,
	ConstraintGreater, ConstraintGreaterEqual, ConstraintRegexp, ConstraintSetContains, ConstraintSetContainsAny,
	ConstraintIsSet, ConstraintIsNotSet, ConstraintDistinctHosts}

// Constraint is a `constraint` block of a job or group: a node is
// eligible only where Attribute (a ${...} of the node, or a literal)
// compares to Value by Operator ("=" when empty).
type Constraint struct {
	Attribute string `json:",omitempty"`
	Operator  string `json:",omitempty"`
	Value     string `json:",omitempty"`
}

// Affinity is an `affinity` block: nodes where the comparison holds are
// preferred (Weight > 0) or avoided (Weight < 0), by |Weight| of 100.
type Affinity struct {
	Attribute string `json:",omitempty"`
	Operator  string `json:",omitempty"`
	Value     string `json:",omitempty"`
	Weight    int
}

// Spread is a `spread` block: the group's allocations are spread over
// the values of Attribute, evenly, or by Targets' percentages, with
// Weight (of 100) against the other preferences.
type Spread struct {
	Attribute string
	Weight    int
	Targets   []SpreadTarget `json:",omitempty"`
}

// SpreadTarget is a spread's `target "VALUE" { percent }`.
type SpreadTarget struct {
	Value   string
	Percent int
}

// DefaultAffinityWeight and DefaultSpreadWeight are a block's weight when
// it gives none.
const (
	DefaultAffinityWeight = 50
	DefaultSpreadWeight   = 50
)

// String is the constraint as a reason names it: `${meta.storage} = "nvme"`.
func (c *Constraint) String() string {
	switch op := c.op(); op {
	case ConstraintDistinctHosts:
		return ConstraintDistinctHosts
	case ConstraintIsSet, ConstraintIsNotSet:
		return c.Attribute + " " + op
	default:
		return fmt.Sprintf("%s %s %q", c.Attribute, op, c.Value)
	}
}

func (c *Constraint) op() string {
	if c.Operator == "" {
		return ConstraintEqual
	}
	return c.Operator
}

// DistinctHosts reports a distinct_hosts constraint that holds (its value
// is "true" or unset).
func (c *Constraint) DistinctHosts() bool {
	return c.op() == ConstraintDistinctHosts && (c.Value == "" || c.Value == "true")
}

// Met reports whether node n meets the constraint (distinct_hosts is the
// scheduler's to check: it is met here).
func (c *Constraint) Met(n *Node) bool {
	if c.op() == ConstraintDistinctHosts {
		return true
	}
	return compare(n, c.Attribute, c.op(), c.Value)
}

// Matches reports whether node n is one the affinity prefers (or, with a
// negative weight, avoids).
func (a *Affinity) Matches(n *Node) bool {
	op := a.Operator
	if op == "" {
		op = ConstraintEqual
	}
	return compare(n, a.Attribute, op, a.Value)
}

// compare evaluates `lhs op rhs` with lhs resolved on node n.
func compare(n *Node, attribute, op, rhs string) bool {
	lhs, ok := ResolveNodeValue(n, attribute)
	switch op {
	case ConstraintIsSet:
		return ok
	case ConstraintIsNotSet:
		return !ok
	}
	if !ok {
		return op == ConstraintNotEqual
	}
	switch op {
	case ConstraintEqual, "==", "is":
		return lhs == rhs
	case ConstraintNotEqual, "not":
		return lhs != rhs
	case ConstraintLess, ConstraintLessEqual, ConstraintGreater, ConstraintGreaterEqual:
		return ordered(lhs, op, rhs)
	case ConstraintRegexp:
		re, err := regexp.Compile(rhs)
		return err == nil && re.MatchString(lhs)
	case ConstraintSetContains, ConstraintSetContainsAny:
		have := splitSet(lhs)
		want := splitSet(rhs)
		for _, w := range want {
			in := slices.Contains(have, w)
			if op == ConstraintSetContainsAny && in {
				return true
			}
			if op == ConstraintSetContains && !in {
				return false
			}
		}
		return op == ConstraintSetContains
	}
	return false
}

// ordered compares as numbers when both sides are, else as strings.
func ordered(lhs, op, rhs string) bool {
	var c int
	l, lerr := strconv.ParseFloat(lhs, 64)
	r, rerr := strconv.ParseFloat(rhs, 64)
	if lerr == nil && rerr == nil {
		switch {
		case l < r:
			c = -1
		case l > r:
			c = 1
		}
	} else {
		c = strings.Compare(lhs, rhs)
	}
	switch op {
	case ConstraintLess:
		return c < 0
	case ConstraintLessEqual:
		return c <= 0
	case ConstraintGreater:
		return c > 0
	}
	return c >= 0
}

func splitSet(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ResolveNodeValue is what a constraint's attribute says of node n:
// ${attr.NAME} (n.Attributes; attr.driver.NAME is "1" for a healthy
// driver), ${meta.NAME} (n.Meta), ${node.datacenter}, ${node.unique.name}
// and ${node.unique.id}; anything not in ${...} is itself. ok is false
// when the node has no such value.
func ResolveNodeValue(n *Node, attribute string) (string, bool) {
	inner, isRef := strings.CutPrefix(attribute, "${")
	if !isRef {
		return attribute, true
	}
	inner, closed := strings.CutSuffix(inner, "}")
	if !closed {
		return "", false
	}
	switch {
	case inner == "node.datacenter":
		return n.Datacenter, n.Datacenter != ""
	case inner == "node.unique.name":
		return n.Name, true
	case inner == "node.unique.id":
		return n.ID, true
	case strings.HasPrefix(inner, "attr.driver."):
		if n.DriverUsable(strings.TrimPrefix(inner, "attr.driver.")) {
			return "1", true
		}
		return "", false
	case strings.HasPrefix(inner, "attr."):
		v, ok := n.Attributes[strings.TrimPrefix(inner, "attr.")]
		return v, ok
	case strings.HasPrefix(inner, "meta."):
		v, ok := n.Meta[strings.TrimPrefix(inner, "meta.")]
		return v, ok
	}
	return "", false
}

// validAttribute checks an attribute: a literal, or a ${...} of the
// forms ResolveNodeValue reads.
func validAttribute(a string) error {
	inner, isRef := strings.CutPrefix(a, "${")
	if !isRef {
		if strings.Contains(a, "${") {
			return fmt.Errorf("attribute %q holds a ${...} that is not the whole of it; write one, e.g. \"${meta.storage}\"", a)
		}
		return nil
	}
	inner, closed := strings.CutSuffix(inner, "}")
	switch {
	case !closed:
		return fmt.Errorf("attribute %q has no closing }", a)
	case inner == "node.datacenter", inner == "node.unique.name", inner == "node.unique.id",
		strings.HasPrefix(inner, "attr.") && len(inner) > len("attr."),
		strings.HasPrefix(inner, "meta.") && len(inner) > len("meta."):
		return nil
	}
	return fmt.Errorf("attribute %q is not one berth knows: use ${attr.NAME}, ${meta.NAME}, ${node.datacenter}, "+
		"${node.unique.name} or ${node.unique.id}", a)
}

// validate checks a constraint.
func (c *Constraint) validate(p *problems, at string) {
	if c == nil {
		p.add("%sa constraint is null", at)
		return
	}
	op := c.op()
	if !slices.Contains(ConstraintOperators, op) {
		p.add("%sconstraint operator %s is not one of %s%s", at, QuoteName(op), orList(ConstraintOperators), didYouMean(op, ConstraintOperators))
		return
	}
	if op == ConstraintDistinctHosts {
		if c.Value != "" && c.Value != "true" && c.Value != "false" {
			p.add("%sdistinct_hosts takes value \"true\" or \"false\", not %s", at, QuoteName(c.Value))
		}
		return
	}
	if c.Attribute == "" {
		p.add("%sconstraint with operator %q needs an attribute, e.g. attribute = \"${meta.storage}\"", at, op)
	} else if err := validAttribute(c.Attribute); err != nil {
		p.add("%sconstraint: %v", at, err)
	}
	if op == ConstraintRegexp {
		if _, err := regexp.Compile(c.Value); err != nil {
			p.add("%sconstraint value %s is not a regular expression: %v", at, QuoteName(c.Value), err)
		}
	}
}

// validate checks an affinity.
func (a *Affinity) validate(p *problems, at string) {
	if a == nil {
		p.add("%san affinity is null", at)
		return
	}
	c := Constraint{Attribute: a.Attribute, Operator: a.Operator, Value: a.Value}
	if c.op() == ConstraintDistinctHosts {
		p.add("%saffinity operator distinct_hosts is a constraint's, not an affinity's", at)
		return
	}
	c.validate(p, at)
	if a.Weight < -100 || a.Weight > 100 || a.Weight == 0 {
		p.add("%saffinity weight %d must be from -100 to 100, and not 0", at, a.Weight)
	}
}

// validate checks a spread.
func (s *Spread) validate(p *problems, at string) {
	if s == nil {
		p.add("%sa spread is null", at)
		return
	}
	if s.Attribute == "" {
		p.add("%sspread needs an attribute, e.g. attribute = \"${node.datacenter}\"", at)
	} else if err := validAttribute(s.Attribute); err != nil {
		p.add("%sspread: %v", at, err)
	}
	if s.Weight < 1 || s.Weight > 100 {
		p.add("%sspread weight %d must be from 1 to 100", at, s.Weight)
	}
	total, seen := 0, map[string]bool{}
	for _, t := range s.Targets {
		if seen[t.Value] {
			p.add("%sspread target %s is given twice", at, QuoteName(t.Value))
		}
		seen[t.Value] = true
		if t.Percent < 0 || t.Percent > 100 {
			p.add("%sspread target %s: percent %d must be from 0 to 100", at, QuoteName(t.Value), t.Percent)
		}
		total += t.Percent
	}
	if total > 100 {
		p.add("%sspread targets' percents add up to %d, over 100", at, total)
	}
}

// ValidatePlacement checks constraints, affinities and spreads on their
// own: the jobspec parser's check, as Job.Validate's.
func ValidatePlacement(cs []*Constraint, as []*Affinity, ss []*Spread) error {
	var p problems
	validatePlacement(&p, "", cs, as, ss)
	if len(p.list) > 0 {
		return NewError(CodeBadRequest, "%s", p.String())
	}
	return nil
}

// validatePlacement checks a job's or group's constraints, affinities and
// spreads.
func validatePlacement(p *problems, at string, cs []*Constraint, as []*Affinity, ss []*Spread) {
	for _, c := range cs {
		c.validate(p, at)
	}
	for _, a := range as {
		a.validate(p, at)
	}
	for _, s := range ss {
		s.validate(p, at)
	}
}

func copyPlacement(cs []*Constraint, as []*Affinity, ss []*Spread) ([]*Constraint, []*Affinity, []*Spread) {
	sc := copyEach(ss)
	for _, s := range sc {
		if s != nil {
			s.Targets = slices.Clone(s.Targets)
		}
	}
	return copyEach(cs), copyEach(as), sc
}

// copyEach copies the pointed-to values of a list, nil entries kept.
func copyEach[T any](in []*T) []*T {
	if in == nil {
		return nil
	}
	out := make([]*T, len(in))
	for i, v := range in {
		if v != nil {
			c := *v
			out[i] = &c
		}
	}
	return out
}
