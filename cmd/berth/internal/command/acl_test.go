package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// aclCase is one CLI run against the ACL fixture: its exit status, what
// it prints, and the write it sends ("" for none).
type aclCase struct {
	name       string
	args       []string
	stdin      string
	wantCode   int
	wantStdout string // exactly, when set
	contains   []string
	wantStderr string
	wantWrite  fixtureWrite // method "" for none
}

func runACLCases(t *testing.T, cases []aclCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fixture{}
			srv := f.newACLServer(t)
			r := runCLI(t, srv.URL, tc.stdin, tc.args...)
			mustExit(t, r, tc.wantCode, tc.wantStderr)
			mustStdout(t, r, tc.wantStdout, tc.contains)
			if tc.wantCode != 0 {
				must.EqOp(t, "", r.stdout)
			}
			f.mustLastWrite(t, tc.wantWrite.method != "", tc.wantWrite)
		})
	}
}

func TestACLBootstrap_Run(t *testing.T) {
	runACLCases(t, []aclCase{
		{name: "prints the token with its secret", args: []string{"acl", "bootstrap"},
			wantStdout: "Accessor ID  = " + tokenBoot + "\n" +
				"Secret ID    = " + secretNew + "\n" +
				"Name         = Bootstrap Token\n" +
				"Type         = management\n" +
				"Policies     = n/a\n" +
				"Create Time  = " + formatTime(fixtureTime) + "\n" +
				"Expiry Time  = <never>\n" +
				"Create Index = 5\n" +
				"Modify Index = 5\n",
			wantWrite: fixtureWrite{method: "POST", path: "/v1/acl/bootstrap"}},
		{name: "json", args: []string{"acl", "bootstrap", "-json"},
			contains:  []string{"{\n    \"AccessorID\": \"" + tokenBoot + "\",\n    \"SecretID\": \"" + secretNew + "\",\n"},
			wantWrite: fixtureWrite{method: "POST", path: "/v1/acl/bootstrap"}},
		{name: "takes no argument", args: []string{"acl", "bootstrap", "now"}, wantCode: 2,
			wantStderr: "Error: this command takes 0 arguments, got 1: now\n\nUsage: berth acl bootstrap [options]"},
	})
}

func TestACLBootstrap_SecondIsRefused(t *testing.T) {
	f := &fixture{}
	srv := f.newACLServer(t)
	mustExit(t, runCLI(t, srv.URL, "", "acl", "bootstrap"), 0, "")
	r := runCLI(t, srv.URL, "", "acl", "bootstrap")
	mustExit(t, r, 1, "Error: ACL bootstrap already done: use the management token it returned\n")
	must.EqOp(t, "", r.stdout)
}

func TestACLTokenCreate_Run(t *testing.T) {
	runACLCases(t, []aclCase{
		{name: "client token with policies and a ttl",
			args: []string{"acl", "token", "create", "-name", "ci", "-policy", "deploy", "-policy=readonly", "-ttl", "1h"},
			wantStdout: "Accessor ID  = " + tokenNew + "\n" +
				"Secret ID    = " + secretNew + "\n" +
				"Name         = ci\n" +
				"Type         = client\n" +
				"Policies     = deploy, readonly\n" +
				"Create Time  = " + formatTime(fixtureTime) + "\n" +
				"Expiry Time  = " + formatTime(fixtureTime.Add(time.Hour)) + "\n" +
				"Create Index = 30\n" +
				"Modify Index = 30\n",
			wantWrite: fixtureWrite{method: "PUT", path: "/v1/acl/token",
				body: `{"Name":"ci","Type":"client","Policies":["deploy","readonly"],"ExpirationTTL":3600000000000}`}},
		{name: "management token", args: []string{"acl", "token", "create", "-type", "management", "-name", "ops"},
			contains:  []string{"Secret ID    = " + secretNew + "\n", "Type         = management\n", "Policies     = n/a\n", "Expiry Time  = <never>\n"},
			wantWrite: fixtureWrite{method: "PUT", path: "/v1/acl/token", body: `{"Name":"ops","Type":"management"}`}},
		{name: "json", args: []string{"acl", "token", "create", "-policy", "readonly", "-json"},
			contains:  []string{"\"SecretID\": \"" + secretNew + "\"", "\"Policies\": [\n        \"readonly\"\n    ]"},
			wantWrite: fixtureWrite{method: "PUT", path: "/v1/acl/token", body: `{"Type":"client","Policies":["readonly"]}`}},
		{name: "unknown type", args: []string{"acl", "token", "create", "-type", "root"}, wantCode: 2,
			wantStderr: "Error: -type \"root\" is not a token type; give -type client or -type management\n\nUsage: berth acl token create"},
		{name: "management with policies", args: []string{"acl", "token", "create", "-type", "management", "-policy", "deploy"}, wantCode: 2,
			wantStderr: "Error: -policy is not taken with -type management"},
		{name: "client without policies", args: []string{"acl", "token", "create", "-name", "ci"}, wantCode: 2,
			wantStderr: "Error: a client token needs at least one -policy"},
		{name: "policy twice", args: []string{"acl", "token", "create", "-policy", "deploy", "-policy", "deploy"}, wantCode: 2,
			wantStderr: `Error: invalid value "deploy" for flag -policy: policy "deploy" is given twice; give each once`},
		{name: "empty policy", args: []string{"acl", "token", "create", "-policy", " "}, wantCode: 2,
			wantStderr: "flag -policy: empty policy name"},
		{name: "bad ttl", args: []string{"acl", "token", "create", "-policy", "deploy", "-ttl", "soon"}, wantCode: 2,
			wantStderr: `Error: invalid value "soon" for flag -ttl`},
		{name: "negative ttl", args: []string{"acl", "token", "create", "-policy", "deploy", "-ttl", "-1h"}, wantCode: 2,
			wantStderr: "Error: -ttl -1h0m0s is negative; give how long the token should last, e.g. -ttl 1h"},
		{name: "an argument", args: []string{"acl", "token", "create", "-policy", "deploy", "ci"}, wantCode: 2,
			wantStderr: "Error: this command takes 0 arguments, got 1: ci"},
	})
}

func TestACLTokenReads_Run(t *testing.T) {
	expiry := formatTime(fixtureTime.Add(24 * time.Hour))
	runACLCases(t, []aclCase{
		{name: "list by name", args: []string{"acl", "token", "list"},
			wantStdout: "Name             Type        Accessor ID                           Policies          Expiry Time\n" +
				"Bootstrap Token  management  " + tokenBoot + "  n/a               <never>\n" +
				"dashboard        client      " + tokenRead + "  readonly          <never>\n" +
				"deploy           client      " + tokenDeploy + "  deploy, readonly  " + expiry + "\n"},
		{name: "info by prefix, no secret", args: []string{"acl", "token", "info", "0b7f9"},
			wantStdout: "Accessor ID  = " + tokenDeploy + "\n" +
				"Name         = deploy\n" +
				"Type         = client\n" +
				"Policies     = deploy, readonly\n" +
				"Create Time  = " + formatTime(fixtureTime.Add(time.Hour)) + "\n" +
				"Expiry Time  = " + expiry + "\n" +
				"Create Index = 7\n" +
				"Modify Index = 9\n"},
		{name: "self", args: []string{"acl", "token", "self", "-token", secretDeploy},
			contains: []string{"Accessor ID  = " + tokenDeploy + "\n", "Name         = deploy\n"}},
		{name: "self as json", args: []string{"acl", "token", "self", "-json", "-token=" + secretDeploy},
			contains: []string{"{\n    \"AccessorID\": \"" + tokenDeploy + "\",\n    \"Name\": \"deploy\""}},
		{name: "self without a token", args: []string{"acl", "token", "self"}, wantCode: 1,
			wantStderr: "Error: no token: the request carried no X-Berth-Token header, or the servers do not know its token\n"},
		{name: "ambiguous prefix", args: []string{"acl", "token", "info", "0b7f"}, wantCode: 1,
			wantStderr: `Error: prefix "0b7f" matches 2 tokens: ` + tokenBoot + ", " + tokenDeploy + "; give more of the ID\n"},
		{name: "unknown", args: []string{"acl", "token", "info", "ffff"}, wantCode: 1,
			wantStderr: `Error: token "ffff" not found; run "berth acl token list" to list them` + "\n"},
		{name: "info needs an accessor", args: []string{"acl", "token", "info"}, wantCode: 2,
			wantStderr: "Error: this command takes one argument\n\nUsage: berth acl token info [options] <accessor>"},
		{name: "list takes no argument", args: []string{"acl", "token", "list", "x"}, wantCode: 2,
			wantStderr: "this command takes 0 arguments"},
	})
}

func TestACLTokenUpdate_Run(t *testing.T) {
	runACLCases(t, []aclCase{
		{name: "rename keeps the rest", args: []string{"acl", "token", "update", "-name", "deploy-ci", "0b7f9"},
			contains: []string{"Accessor ID  = " + tokenDeploy + "\n", "Name         = deploy-ci\n",
				"Policies     = deploy, readonly\n", "Modify Index = 31\n"},
			wantWrite: fixtureWrite{method: "PUT", path: "/v1/acl/token/" + tokenDeploy,
				body: `{"AccessorID":"` + tokenDeploy + `","Name":"deploy-ci","Type":"client","Policies":["deploy","readonly"],` +
					`"ExpirationTime":"` + fixtureTime.Add(24*time.Hour).Format(time.RFC3339) + `"}`}},
		{name: "policies replace", args: []string{"acl", "token", "update", tokenRead, "-policy", "deploy"},
			contains: []string{"Policies     = deploy\n"},
			wantWrite: fixtureWrite{method: "PUT", path: "/v1/acl/token/" + tokenRead,
				body: `{"AccessorID":"` + tokenRead + `","Name":"dashboard","Type":"client","Policies":["deploy"]}`}},
		{name: "to management drops the policies", args: []string{"acl", "token", "update", "-type", "management", "c11e"},
			contains: []string{"Type         = management\n", "Policies     = n/a\n"},
			wantWrite: fixtureWrite{method: "PUT", path: "/v1/acl/token/" + tokenRead,
				body: `{"AccessorID":"` + tokenRead + `","Name":"dashboard","Type":"management"}`}},
		{name: "sends no secret", args: []string{"acl", "token", "update", "-name", "x", "c11e", "-json"},
			contains:  []string{"\"Name\": \"x\""},
			wantWrite: fixtureWrite{method: "PUT", path: "/v1/acl/token/" + tokenRead, body: `{"AccessorID":"` + tokenRead + `","Name":"x","Type":"client","Policies":["readonly"]}`}},
		{name: "to client without policies", args: []string{"acl", "token", "update", "-type", "client", "0b7f1"}, wantCode: 2,
			wantStderr: "Error: token " + tokenBoot + ": a client token needs at least one -policy"},
		{name: "policies on a management token", args: []string{"acl", "token", "update", "-policy", "deploy", "0b7f1"}, wantCode: 2,
			wantStderr: "Error: token " + tokenBoot + ": -policy is not taken with -type management"},
		{name: "nothing to change", args: []string{"acl", "token", "update", "0b7f9"}, wantCode: 2,
			wantStderr: "Error: nothing to change; give -name, -type or -policy\n\nUsage: berth acl token update [options] <accessor>"},
		{name: "unknown token", args: []string{"acl", "token", "update", "-name", "x", "ffff"}, wantCode: 1,
			wantStderr: `Error: token "ffff" not found; run "berth acl token list" to list them`},
	})
}

func TestACLTokenDelete_Run(t *testing.T) {
	runACLCases(t, []aclCase{
		{name: "by prefix", args: []string{"acl", "token", "delete", "c11e"},
			wantStdout: `Token "` + tokenRead + `" deleted` + "\n",
			wantWrite:  fixtureWrite{method: "DELETE", path: "/v1/acl/token/" + tokenRead}},
		{name: "ambiguous", args: []string{"acl", "token", "delete", "0b7f"}, wantCode: 1,
			wantStderr: `Error: prefix "0b7f" matches 2 tokens`},
		{name: "no accessor", args: []string{"acl", "token", "delete"}, wantCode: 2,
			wantStderr: "Error: this command takes one argument"},
	})
}

func TestACLPolicyApply_Run(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "deploy.hcl")
	must.NoError(t, os.WriteFile(rules, []byte(readonlyRules), 0o600))
	blank := filepath.Join(dir, "blank.hcl")
	must.NoError(t, os.WriteFile(blank, []byte("\n \n"), 0o600))
	rulesJSON, err := json.Marshal(readonlyRules)
	must.NoError(t, err)
	runACLCases(t, []aclCase{
		{name: "from a file", args: []string{"acl", "policy", "apply", "-description", "read only", "readonly", rules},
			wantStdout: "Policy \"readonly\" written\n",
			wantWrite: fixtureWrite{method: "PUT", path: "/v1/acl/policy/readonly",
				body: `{"Name":"readonly","Description":"read only","Rules":` + string(rulesJSON) + `}`}},
		{name: "from stdin", args: []string{"acl", "policy", "apply", "readonly", "-"}, stdin: readonlyRules,
			wantStdout: "Policy \"readonly\" written\n",
			wantWrite:  fixtureWrite{method: "PUT", path: "/v1/acl/policy/readonly", body: `{"Name":"readonly","Rules":` + string(rulesJSON) + `}`}},
		{name: "refused by the servers", args: []string{"acl", "policy", "apply", "bad", rules}, wantCode: 1,
			wantStderr: `Error: policy "bad": rules line 1: unknown block "nod"; see the policy language in the documentation` + "\n",
			wantWrite:  fixtureWrite{method: "PUT", path: "/v1/acl/policy/bad", body: `{"Name":"bad","Rules":` + string(rulesJSON) + `}`}},
		{name: "no such file", args: []string{"acl", "policy", "apply", "readonly", filepath.Join(dir, "nope.hcl")}, wantCode: 1,
			wantStderr: "Error: cannot read the policy rules: open " + filepath.Join(dir, "nope.hcl") + ": no such file or directory\n"},
		{name: "empty rules", args: []string{"acl", "policy", "apply", "readonly", blank}, wantCode: 1,
			wantStderr: "Error: the policy rules in " + blank + " are empty"},
		{name: "empty stdin", args: []string{"acl", "policy", "apply", "readonly", "-"}, wantCode: 1,
			wantStderr: "Error: the policy rules in standard input are empty"},
		{name: "no file", args: []string{"acl", "policy", "apply", "readonly"}, wantCode: 2,
			wantStderr: "Error: this command takes 2 arguments\n\nUsage: berth acl policy apply [options] <name> <file>"},
	})
}

func TestACLPolicyCommands_Run(t *testing.T) {
	runACLCases(t, []aclCase{
		{name: "list by name", args: []string{"acl", "policy", "list"},
			wantStdout: "Name      Description\n" +
				"deploy    CI deploys jobs and volumes\n" +
				"readonly  <none>\n"},
		{name: "info", args: []string{"acl", "policy", "info", "readonly"},
			wantStdout: "Name         = readonly\n" +
				"Description  = <none>\n" +
				"Create Index = 3\n" +
				"Modify Index = 3\n" +
				"\nRules\n" + readonlyRules},
		{name: "info of a missing policy", args: []string{"acl", "policy", "info", "nope"}, wantCode: 1,
			wantStderr: "Error: policy \"nope\" not found\n"},
		{name: "delete", args: []string{"acl", "policy", "delete", "deploy"},
			wantStdout: "Policy \"deploy\" deleted\n",
			wantWrite:  fixtureWrite{method: "DELETE", path: "/v1/acl/policy/deploy"}},
		{name: "delete a missing policy", args: []string{"acl", "policy", "delete", "nope"}, wantCode: 1,
			wantStderr: "Error: policy \"nope\" not found\n",
			wantWrite:  fixtureWrite{method: "DELETE", path: "/v1/acl/policy/nope"}},
	})
}

func TestACLCommands_JSON_IsTheAPIsJSON(t *testing.T) {
	f := &fixture{}
	srv := f.newACLServer(t)
	cases := []struct {
		name     string
		args     []string
		endpoint string
	}{
		{"tokens", []string{"acl", "token", "list", "-json"}, "/v1/acl/tokens"},
		{"token by prefix", []string{"acl", "token", "info", "c11e", "-json"}, "/v1/acl/token/" + tokenRead},
		{"policies", []string{"acl", "policy", "list", "-json"}, "/v1/acl/policies"},
		{"policy", []string{"acl", "policy", "info", "-json", "deploy"}, "/v1/acl/policy/deploy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, srv.URL, "", tc.args...)
			must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
			var want, got any
			must.NoError(t, json.Unmarshal(fetch(t, srv.URL+tc.endpoint), &want))
			must.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
			must.Eq(t, want, got)
			must.StrContains(t, r.stdout, "\n    ", must.Sprint("indented"))
		})
	}
}

func TestACL_GroupHelp(t *testing.T) {
	r := runCLI(t, "http://127.0.0.1:1", "", "acl")
	mustExit(t, r, 2, "Usage: berth acl <subcommand>")
	for _, verb := range []string{"bootstrap", "token create", "token list", "token info", "token update",
		"token delete", "token self", "policy apply", "policy list", "policy info", "policy delete"} {
		must.StrContains(t, r.stderr, "    "+verb+" ")
	}
	r = runCLI(t, "http://127.0.0.1:1", "", "acl", "token")
	mustExit(t, r, 2, "Usage: berth acl token <subcommand>")
	must.False(t, strings.Contains(r.stderr, "policy apply"))
}
