package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

var aclPolicyApplyCommand = &command{
	name:     "acl policy apply",
	synopsis: "Create or replace an ACL policy",
	help: `[options] <name> <file>

  Write the policy <name> with the rules in <file>, in the policy language
  (HCL; see "ACLs" in the documentation). A policy of that name is
  replaced. If <file> is "-", the rules are read from standard input. The
  servers check the rules and refuse a policy they cannot parse.

Policy Apply Options:

  -description <text>
    What the policy is for.
`,
	run: runACLPolicyApply,
}

func runACLPolicyApply(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	description := fs.String("description", "", "")
	pos, status, ok := m.parse(fs, args, 2, 2)
	if !ok {
		return status
	}
	name, path := pos[0], pos[1]
	rules, err := m.readRules(path)
	if err != nil {
		return m.fail("%v", err)
	}
	c, err := m.client(ctx)
	if err != nil {
		return m.fail("%v", err)
	}
	policy := &structs.ACLPolicy{Name: name, Description: *description, Rules: rules}
	if _, err := c.ACLPolicies().Upsert(policy); err != nil {
		return m.fail("%s", apiError("write policy "+strconv.Quote(name), err))
	}
	fmt.Fprintf(m.stdout, "Policy %q written\n", name)
	return exitOK
}

// readRules reads a policy's rules from path, or standard input for "-".
func (m *meta) readRules(path string) (string, error) {
	var src []byte
	var err error
	if path == "-" {
		src, err = io.ReadAll(m.stdin)
		if err != nil {
			return "", fmt.Errorf("cannot read the policy rules from standard input: %w", err)
		}
	} else if src, err = os.ReadFile(path); err != nil {
		return "", fmt.Errorf("cannot read the policy rules: %w", err)
	}
	if strings.TrimSpace(string(src)) == "" {
		where := path
		if path == "-" {
			where = "standard input"
		}
		return "", fmt.Errorf("the policy rules in %s are empty; write at least one block, e.g. node { policy = \"read\" }", where)
	}
	return string(src), nil
}

var aclPolicyDeleteCommand = &command{
	name:     "acl policy delete",
	synopsis: "Delete an ACL policy",
	help: `[options] <name>

  Delete the policy <name>. Tokens that name it are no longer allowed what
  it allowed.
`,
	run: runACLPolicyDelete,
}

func runACLPolicyDelete(ctx context.Context, m *meta, args []string) int {
	pos, status, ok := m.parse(m.flagSet(), args, 1, 1)
	if !ok {
		return status
	}
	c, err := m.client(ctx)
	if err != nil {
		return m.fail("%v", err)
	}
	if _, err := c.ACLPolicies().Delete(pos[0]); err != nil {
		return m.fail("%s", apiError("delete policy "+strconv.Quote(pos[0]), err))
	}
	fmt.Fprintf(m.stdout, "Policy %q deleted\n", pos[0])
	return exitOK
}

var aclPolicyListCommand = &command{
	name:     "acl policy list",
	synopsis: "List ACL policies",
	help: `[options]

  List the policies by name, with their descriptions.

Policy List Options:

  -json
    Print the API's JSON.
`,
	run: runACLPolicyList,
}

func runACLPolicyList(ctx context.Context, m *meta, args []string) int {
	return runRead(ctx, m, args, readSpec[[]*structs.ACLPolicyListStub]{
		endpoint: "/v1/acl/policies",
		doing:    "list policies",
		get: func(c *api.Client) ([]*structs.ACLPolicyListStub, error) {
			policies, _, err := c.ACLPolicies().List(nil)
			return policies, err
		},
		print: (*meta).policyList,
	})
}

var aclPolicyInfoCommand = &command{
	name:     "acl policy info",
	synopsis: "Show an ACL policy and its rules",
	help: `[options] <name>

  Show the policy <name> with its rules.

Policy Info Options:

  -json
    Print the API's JSON.
`,
	run: runACLPolicyInfo,
}

func runACLPolicyInfo(ctx context.Context, m *meta, args []string) int {
	return runInfo(ctx, m, args, infoSpec[*structs.ACLPolicy]{
		noun:    "policy",
		getPath: "/v1/acl/policy/",
		get: func(c *api.Client, name string) (*structs.ACLPolicy, error) {
			p, _, err := c.ACLPolicies().Info(name, nil)
			return p, err
		},
		print: (*meta).policyInfo,
	})
}

func (m *meta) policyList(policies []*structs.ACLPolicyListStub, _ bool) {
	if len(policies) == 0 {
		m.println("No ACL policies")
		return
	}
	policies = slices.Clone(policies)
	sort.Slice(policies, func(i, j int) bool { return policies[i].Name < policies[j].Name })
	rows := make([][]string, 0, len(policies))
	for _, p := range policies {
		rows = append(rows, []string{p.Name, orNone(oneLine(p.Description))})
	}
	table(m.stdout, []string{"Name", "Description"}, rows)
}

func (m *meta) policyInfo(p *structs.ACLPolicy) {
	kv(m.stdout, [][2]string{
		{"Name", p.Name},
		{"Description", orNone(oneLine(p.Description))},
		{"Create Index", strconv.FormatUint(p.CreateIndex, 10)},
		{"Modify Index", strconv.FormatUint(p.ModifyIndex, 10)},
	})
	section(m.stdout, "Rules")
	fmt.Fprintln(m.stdout, strings.TrimRight(p.Rules, "\n"))
}
