package command

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

var aclBootstrapCommand = &command{
	name:     "acl bootstrap",
	synopsis: "Make the first ACL management token",
	help: `[options]

  Make the cluster's first management token, once, on a cluster whose
  agents run with acl { enabled = true }. The token's Secret ID is shown
  this once: keep it, and send it with -token or BERTH_TOKEN. A second
  bootstrap is refused, naming the reset index.

  If the management token is lost, write the reset index into the file
  acl-bootstrap-reset in the server data dir of the leader, which the
  refusal names (<data_dir>/server/acl-bootstrap-reset), and run the
  bootstrap again: it makes one more management token, once; the tokens
  made before stay valid.

Bootstrap Options:

  -json
    Print the token's JSON.
`,
	run: runACLBootstrap,
}

func runACLBootstrap(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	asJSON := fs.Bool("json", false, "")
	if _, status, ok := m.parse(fs, args, 0, 0); !ok {
		return status
	}
	c, err := m.client(ctx)
	if err != nil {
		return m.fail("%v", err)
	}
	token, _, err := c.ACLBootstrap()
	if err != nil {
		return m.fail("%s", apiError("bootstrap ACLs", err))
	}
	return m.printToken(token, *asJSON, true)
}

var aclTokenCreateCommand = &command{
	name:     "acl token create",
	synopsis: "Create an ACL token",
	help: `[options]

  Create a token. Its Secret ID is shown this once: the servers keep only
  its hash.

Token Create Options:

  -name <name>
    A name that says what the token is for.

  -type <client|management>
    A client token is allowed what its policies allow; a management token
    is allowed everything. Default = client.

  -policy <name>
    A policy of the token. Repeat it for several. A client token needs at
    least one; a management token takes none.

  -ttl <duration>
    Make the token expire after this long, e.g. 1h or 720h. Default: it
    never expires.

  -json
    Print the token's JSON.
`,
	run: runACLTokenCreate,
}

func runACLTokenCreate(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	name := fs.String("name", "", "")
	typ := fs.String("type", structs.ACLTokenTypeClient, "")
	var policies policyFlag
	fs.Var(&policies, "policy", "")
	ttl := fs.Duration("ttl", 0, "")
	asJSON := fs.Bool("json", false, "")
	if _, status, ok := m.parse(fs, args, 0, 0); !ok {
		return status
	}
	if problem := checkTokenFlags(*typ, policies); problem != "" {
		return m.usageError("%s", problem)
	}
	if *ttl < 0 {
		return m.usageError("-ttl %s is negative; give how long the token should last, e.g. -ttl 1h", *ttl)
	}
	c, err := m.client(ctx)
	if err != nil {
		return m.fail("%v", err)
	}
	token, _, err := c.ACLTokens().Create(&structs.ACLToken{Name: *name, Type: *typ, Policies: policies, ExpirationTTL: *ttl})
	if err != nil {
		return m.fail("%s", apiError("create token", err))
	}
	return m.printToken(token, *asJSON, true)
}

// checkTokenFlags says what is wrong with a token's -type and -policy
// flags, or "".
func checkTokenFlags(typ string, policies []string) string {
	switch {
	case typ != structs.ACLTokenTypeClient && typ != structs.ACLTokenTypeManagement:
		return fmt.Sprintf("-type %q is not a token type; give -type client or -type management", typ)
	case typ == structs.ACLTokenTypeManagement && len(policies) > 0:
		return "-policy is not taken with -type management: a management token is allowed everything"
	case typ == structs.ACLTokenTypeClient && len(policies) == 0:
		return "a client token needs at least one -policy; list them with \"berth acl policy list\""
	}
	return ""
}

var aclTokenUpdateCommand = &command{
	name:     "acl token update",
	synopsis: "Change an ACL token's name, type or policies",
	help: `[options] <accessor>

  Change a token's name, type or policies; its Secret ID stays the same.
  The token may be given by a unique prefix of its Accessor ID. Flags not
  given leave their field as it is.

Token Update Options:

  -name <name>
    The token's new name.

  -type <client|management>
    The token's new type. Making it a management token drops its policies.

  -policy <name>
    A policy of the token. Repeat it for several: they replace the token's
    policies.

  -json
    Print the token's JSON.
`,
	run: runACLTokenUpdate,
}

func runACLTokenUpdate(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	name := fs.String("name", "", "")
	typ := fs.String("type", "", "")
	var policies policyFlag
	fs.Var(&policies, "policy", "")
	asJSON := fs.Bool("json", false, "")
	pos, status, ok := m.parse(fs, args, 1, 1)
	if !ok {
		return status
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["name"] && !set["type"] && !set["policy"] {
		return m.usageError("nothing to change; give -name, -type or -policy")
	}
	c, id, code := aclTokenSpec.connect(ctx, m, pos[0])
	if c == nil {
		return code
	}
	token, _, err := c.ACLTokens().Info(id, nil)
	if err != nil {
		return m.fail("%s", apiError("read token "+strconv.Quote(id), err))
	}
	if set["name"] {
		token.Name = *name
	}
	if set["type"] {
		token.Type = *typ
		if *typ == structs.ACLTokenTypeManagement && !set["policy"] {
			token.Policies = nil
		}
	}
	if set["policy"] {
		token.Policies = policies
	}
	if problem := checkTokenFlags(token.Type, token.Policies); problem != "" {
		return m.usageError("token %s: %s", id, problem)
	}
	token.SecretID = ""
	updated, _, err := c.ACLTokens().Update(token)
	if err != nil {
		return m.fail("%s", apiError("update token "+strconv.Quote(id), err))
	}
	return m.printToken(updated, *asJSON, false)
}

var aclTokenDeleteCommand = &command{
	name:     "acl token delete",
	synopsis: "Delete an ACL token",
	help: `[options] <accessor>

  Delete a token: its secret is refused from then on. The token may be
  given by a unique prefix of its Accessor ID.
`,
	run: runACLTokenDelete,
}

func runACLTokenDelete(ctx context.Context, m *meta, args []string) int {
	pos, status, ok := m.parse(m.flagSet(), args, 1, 1)
	if !ok {
		return status
	}
	c, id, code := aclTokenSpec.connect(ctx, m, pos[0])
	if c == nil {
		return code
	}
	if _, err := c.ACLTokens().Delete(id); err != nil {
		return m.fail("%s", apiError("delete token "+strconv.Quote(id), err))
	}
	fmt.Fprintf(m.stdout, "Token %q deleted\n", id)
	return exitOK
}

var aclTokenListCommand = &command{
	name:     "acl token list",
	synopsis: "List ACL tokens",
	help: `[options]

  List the tokens, without their secrets.

Token List Options:

  -json
    Print the API's JSON.
`,
	run: runACLTokenList,
}

func runACLTokenList(ctx context.Context, m *meta, args []string) int {
	return runRead(ctx, m, args, readSpec[[]*structs.ACLTokenListStub]{
		endpoint: aclTokenSpec.listPath,
		doing:    "list tokens",
		get: func(c *api.Client) ([]*structs.ACLTokenListStub, error) {
			tokens, _, err := c.ACLTokens().List(nil)
			return tokens, err
		},
		print: (*meta).tokenList,
	})
}

var aclTokenInfoCommand = &command{
	name:     "acl token info",
	synopsis: "Show an ACL token",
	help: `[options] <accessor>

  Show a token, without its secret. The token may be given by a unique
  prefix of its Accessor ID.

Token Info Options:

  -json
    Print the API's JSON.
`,
	run: runACLTokenInfo,
}

func runACLTokenInfo(ctx context.Context, m *meta, args []string) int {
	return runInfo(ctx, m, args, infoSpec[*structs.ACLToken]{
		noun:    "token",
		getPath: aclTokenSpec.getPath,
		resolve: aclTokenSpec.resolve,
		get: func(c *api.Client, id string) (*structs.ACLToken, error) {
			token, _, err := c.ACLTokens().Info(id, nil)
			return token, err
		},
		print: func(m *meta, token *structs.ACLToken) { m.tokenInfo(token, false) },
	})
}

var aclTokenSelfCommand = &command{
	name:     "acl token self",
	synopsis: "Show the ACL token this command sends",
	help: `[options]

  Show the token given with -token or BERTH_TOKEN, without its secret.

Token Self Options:

  -json
    Print the API's JSON.
`,
	run: runACLTokenSelf,
}

func runACLTokenSelf(ctx context.Context, m *meta, args []string) int {
	return runRead(ctx, m, args, readSpec[*structs.ACLToken]{
		endpoint: "/v1/acl/token/self",
		doing:    "read this command's token",
		get: func(c *api.Client) (*structs.ACLToken, error) {
			token, _, err := c.ACLTokens().Self(nil)
			return token, err
		},
		print: func(m *meta, token *structs.ACLToken, _ bool) { m.tokenInfo(token, false) },
	})
}

// aclTokenSpec finds tokens by a unique prefix of their accessor IDs.
var aclTokenSpec = statusSpec[*structs.ACLTokenListStub, *structs.ACLToken]{
	noun:     "token",
	listCmd:  "berth acl token list",
	listPath: "/v1/acl/tokens",
	getPath:  "/v1/acl/token/",
	list: func(c *api.Client, q *api.QueryOptions) ([]*structs.ACLTokenListStub, *api.QueryMeta, error) {
		return c.ACLTokens().List(q)
	},
	id: func(t *structs.ACLTokenListStub) string { return t.AccessorID },
}

// printToken prints a token a write answered with: its JSON for -json,
// else its fields, with the Secret ID if withSecret.
func (m *meta) printToken(token *structs.ACLToken, asJSON, withSecret bool) int {
	if asJSON {
		return m.printValue(token)
	}
	m.tokenInfo(token, withSecret)
	return exitOK
}

// tokenInfo prints a token's fields, Nomad's way; the Secret ID only if
// withSecret.
func (m *meta) tokenInfo(t *structs.ACLToken, withSecret bool) {
	pairs := [][2]string{{"Accessor ID", t.AccessorID}}
	if withSecret {
		pairs = append(pairs, [2]string{"Secret ID", t.SecretID})
	}
	expiry := "<never>"
	if t.ExpirationTime != nil {
		expiry = formatTime(*t.ExpirationTime)
	}
	pairs = append(pairs,
		[2]string{"Name", orNone(t.Name)},
		[2]string{"Type", t.Type},
		[2]string{"Policies", tokenPolicies(t.Type, t.Policies)},
		[2]string{"Create Time", formatTime(t.CreateTime)},
		[2]string{"Expiry Time", expiry},
		[2]string{"Create Index", strconv.FormatUint(t.CreateIndex, 10)},
		[2]string{"Modify Index", strconv.FormatUint(t.ModifyIndex, 10)},
	)
	kv(m.stdout, pairs)
}

// tokenPolicies shows a token's policies; a management token's are n/a,
// as it is allowed everything.
func tokenPolicies(typ string, policies []string) string {
	if typ == structs.ACLTokenTypeManagement {
		return "n/a"
	}
	return orNone(strings.Join(policies, ", "))
}

func (m *meta) tokenList(tokens []*structs.ACLTokenListStub, _ bool) {
	if len(tokens) == 0 {
		m.println("No ACL tokens")
		return
	}
	// By name, then accessor ID.
	tokens = slices.Clone(tokens)
	sort.SliceStable(tokens, func(i, j int) bool {
		if tokens[i].Name != tokens[j].Name {
			return tokens[i].Name < tokens[j].Name
		}
		return tokens[i].AccessorID < tokens[j].AccessorID
	})
	rows := make([][]string, 0, len(tokens))
	for _, t := range tokens {
		expiry := "<never>"
		if t.ExpirationTime != nil {
			expiry = formatTime(*t.ExpirationTime)
		}
		rows = append(rows, []string{orNone(t.Name), t.Type, t.AccessorID, tokenPolicies(t.Type, t.Policies), expiry})
	}
	table(m.stdout, []string{"Name", "Type", "Accessor ID", "Policies", "Expiry Time"}, rows)
}

// policyFlag collects repeated -policy flags, in order.
type policyFlag []string

func (p *policyFlag) String() string { return strings.Join(*p, ",") }

func (p *policyFlag) Set(v string) error {
	switch {
	case strings.TrimSpace(v) == "":
		return fmt.Errorf("empty policy name; give -policy <name>")
	case slices.Contains(*p, v):
		return fmt.Errorf("policy %q is given twice; give each once", v)
	}
	*p = append(*p, v)
	return nil
}
