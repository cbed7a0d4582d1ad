package acl

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/berth-csi/berth/structs"
)

// Policy levels: what a block's policy argument may say. A namespace takes
// deny, read or write; node and operator deny, read or write; plugin deny,
// list, read or write.
const (
	PolicyDeny  = "deny"
	PolicyList  = "list"
	PolicyRead  = "read"
	PolicyWrite = "write"
)

// Namespace capabilities: what a request in a namespace may need.
const (
	CapDeny              = "deny" // in capabilities, denies the namespace as policy = "deny" does
	CapSubmitJob         = "submit-job"
	CapReadJob           = "read-job"
	CapReadLogs          = "read-logs"
	CapCSIRegisterPlugin = "csi-register-plugin"
	CapCSIWriteVolume    = "csi-write-volume"
	CapCSIReadVolume     = "csi-read-volume"
	CapCSIListVolume     = "csi-list-volume"
	CapCSIMountVolume    = "csi-mount-volume"
)

// capabilities lists every name the capabilities argument takes.
var capabilities = []string{
	CapDeny, CapSubmitJob, CapReadJob, CapReadLogs, CapCSIRegisterPlugin,
	CapCSIWriteVolume, CapCSIReadVolume, CapCSIListVolume, CapCSIMountVolume,
}

// readCapabilities and writeCapabilities are what a namespace's policy
// read and write grant (see the package doc).
var (
	readCapabilities  = []string{CapReadJob, CapCSIListVolume, CapCSIReadVolume}
	writeCapabilities = append(slices.Clone(readCapabilities),
		CapSubmitJob, CapReadLogs, CapCSIWriteVolume, CapCSIMountVolume, CapCSIRegisterPlugin)
)

// maxRulesSize bounds the rules Parse takes: a policy is a few lines.
const maxRulesSize = 64 << 10

// Policy is a parsed policy document. Node, Plugin and Operator are ""
// when the document has no such block.
type Policy struct {
	Namespaces []*NamespaceRule
	Node       string
	Plugin     string
	Operator   string
}

// NamespaceRule is one namespace block. Name may hold '*' globs.
// Capabilities are the block's capabilities expanded with what its policy
// grants; Deny is set by policy = "deny" or "deny" in capabilities.
type NamespaceRule struct {
	Name         string
	Policy       string
	Capabilities []string
	Deny         bool
}

// The shapes gohcl decodes into. Arguments are kept as attributes so that
// errors about their values name their line.
type policyFile struct {
	Namespaces []*namespaceBlock `hcl:"namespace,block"`
	Node       *scopeBlock       `hcl:"node,block"`
	Plugin     *scopeBlock       `hcl:"plugin,block"`
	Operator   *scopeBlock       `hcl:"operator,block"`
}

type namespaceBlock struct {
	Name         string         `hcl:"name,label"`
	Policy       *hcl.Attribute `hcl:"policy,optional"`
	Capabilities *hcl.Attribute `hcl:"capabilities,optional"`
	DefRange     hcl.Range      `hcl:",def_range"`
}

type scopeBlock struct {
	Policy *hcl.Attribute `hcl:"policy"`
}

// Parse parses a policy's rules. The error is a BadRequest naming each
// problem's line, in HCL's words for syntax and unknown names, and with a
// suggestion for a misspelt policy or capability.
func Parse(rules string) (*Policy, error) {
	if len(rules) > maxRulesSize {
		return nil, structs.NewError(structs.CodeBadRequest, "policy rules are %d bytes; the most is %d", len(rules), maxRulesSize)
	}
	if strings.TrimSpace(rules) == "" {
		return nil, structs.NewError(structs.CodeBadRequest, "policy rules are empty; write at least one namespace, node, plugin or operator block")
	}
	p := &parser{}
	file, diags := hclsyntax.ParseConfig([]byte(rules), "rules", hcl.InitialPos)
	if diags.HasErrors() {
		return nil, p.diagError(diags)
	}
	var raw policyFile
	if diags := gohcl.DecodeBody(file.Body, nil, &raw); diags.HasErrors() {
		return nil, p.diagError(diags)
	}
	pol := &Policy{}
	seen := map[string]int{}
	for _, b := range raw.Namespaces {
		line := b.DefRange.Start.Line
		if first, dup := seen[b.Name]; dup {
			p.errorf(line, "namespace %q is given twice (first on line %d); merge the blocks", b.Name, first)
			continue
		}
		seen[b.Name] = line
		pol.Namespaces = append(pol.Namespaces, p.namespace(b))
	}
	pol.Node = p.scope("node", raw.Node, PolicyDeny, PolicyRead, PolicyWrite)
	pol.Plugin = p.scope("plugin", raw.Plugin, PolicyDeny, PolicyList, PolicyRead, PolicyWrite)
	pol.Operator = p.scope("operator", raw.Operator, PolicyDeny, PolicyRead, PolicyWrite)
	if len(p.errs) > 0 {
		return nil, structs.NewError(structs.CodeBadRequest, "policy rules: %s", strings.Join(p.errs, "; "))
	}
	return pol, nil
}

// parser collects every problem of one document.
type parser struct {
	errs []string
}

func (p *parser) errorf(line int, format string, args ...any) {
	p.errs = append(p.errs, fmt.Sprintf("line %d: ", line)+fmt.Sprintf(format, args...))
}

// diagError renders HCL's diagnostics, each with its line.
func (p *parser) diagError(diags hcl.Diagnostics) error {
	for _, d := range diags.Errs() {
		var diag *hcl.Diagnostic
		if !errors.As(d, &diag) {
			p.errs = append(p.errs, d.Error())
			continue
		}
		msg := diag.Summary
		if diag.Detail != "" {
			msg += ": " + diag.Detail
		}
		if diag.Subject != nil {
			p.errorf(diag.Subject.Start.Line, "%s", msg)
		} else {
			p.errs = append(p.errs, msg)
		}
	}
	return structs.NewError(structs.CodeBadRequest, "policy rules: %s", strings.Join(p.errs, "; "))
}

// stringArg decodes an attribute holding a string; ok is false (and the
// problem recorded) when it holds something else.
func (p *parser) stringArg(where string, a *hcl.Attribute) (string, bool) {
	var s string
	if diags := gohcl.DecodeExpression(a.Expr, nil, &s); diags.HasErrors() {
		p.errorf(a.Range.Start.Line, "%s: %s must be a string", where, a.Name)
		return "", false
	}
	return s, true
}

func (p *parser) namespace(b *namespaceBlock) *NamespaceRule {
	where := fmt.Sprintf("namespace %q", b.Name)
	line := b.DefRange.Start.Line
	rule := &NamespaceRule{Name: b.Name}
	if err := validNamespacePattern(b.Name); err != "" {
		p.errorf(line, "%s: %s", where, err)
	}
	if b.Policy == nil && b.Capabilities == nil {
		p.errorf(line, "%s: give a policy (deny, read, write) or capabilities", where)
	}
	caps := map[string]bool{}
	if b.Policy != nil {
		if s, ok := p.stringArg(where, b.Policy); ok {
			rule.Policy = s
			switch s {
			case PolicyDeny:
				rule.Deny = true
			case PolicyRead:
				addAll(caps, readCapabilities)
			case PolicyWrite:
				addAll(caps, writeCapabilities)
			default:
				p.errorf(b.Policy.Range.Start.Line, "%s: unknown policy %q%s; a namespace's policy is one of deny, read, write",
					where, s, didYouMean(s, []string{PolicyDeny, PolicyRead, PolicyWrite}))
			}
		}
	}
	if a := b.Capabilities; a != nil {
		var list []string
		if diags := gohcl.DecodeExpression(a.Expr, nil, &list); diags.HasErrors() {
			p.errorf(a.Range.Start.Line, "%s: capabilities must be a list of strings", where)
		}
		for _, c := range list {
			switch {
			case c == CapDeny:
				rule.Deny = true
			case slices.Contains(capabilities, c):
				caps[c] = true
			default:
				p.errorf(a.Range.Start.Line, "%s: unknown capability %q%s; capabilities are %s",
					where, c, didYouMean(c, capabilities), strings.Join(capabilities, ", "))
			}
		}
	}
	for c := range caps {
		rule.Capabilities = append(rule.Capabilities, c)
	}
	slices.Sort(rule.Capabilities)
	return rule
}

// scope reads a node, plugin or operator block's policy, "" when the block
// is absent or wrong.
func (p *parser) scope(name string, b *scopeBlock, allowed ...string) string {
	if b == nil {
		return ""
	}
	s, ok := p.stringArg(name, b.Policy)
	if !ok {
		return ""
	}
	if !slices.Contains(allowed, s) {
		p.errorf(b.Policy.Range.Start.Line, "%s: unknown policy %q%s; %s's policy is one of %s",
			name, s, didYouMean(s, allowed), name, strings.Join(allowed, ", "))
		return ""
	}
	return s
}

// validNamespacePattern says what is wrong with a namespace block's name,
// "" when nothing is: a namespace name, in which '*' matches any run of
// characters.
func validNamespacePattern(name string) string {
	if name == "*" {
		return ""
	}
	if err := structs.ValidateName(structs.NameNamespace, strings.ReplaceAll(name, "*", "x")); err != nil {
		return err.Error()
	}
	return ""
}

func addAll(set map[string]bool, names []string) {
	for _, n := range names {
		set[n] = true
	}
}

// didYouMean suggests the known name closest to s, as
// ` (did you mean "x"?)`, or "" when none is close enough to be a typo
// (structs.SuggestName).
func didYouMean(s string, known []string) string {
	best := structs.SuggestName(s, known)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
