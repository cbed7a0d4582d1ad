package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

const module = "github.com/berth-csi/berth"

// The two top-level folders that are layers of their own, checked before
// the table below (docs/architecture.md, "Packages"):
const (
	// internalDir holds leaf libraries (backoff, clock, telemetry,
	// atomicfile, testlog, ...): each may import only other internal/
	// packages, tests included, and never berth's higher packages
	// (structs, state, server, client, ...); its row narrows that further.
	internalDir = "internal"
	// harnessDir holds the harnesses that run berth whole, as processes
	// (agentproc, chaos, loadtest, fleet) or in one test binary (integration):
	// they may import anything, and no package outside harnessDir may
	// import them, tests included.
	harnessDir = "harness"
)

// allowed maps a package (by path inside the module; the longest matching
// prefix wins) to the berth packages it may import: an exact path, a
// subtree ("client/..."), or "*" for any (but a harness, outside
// harnessDir). docs/architecture.md's package table lists exactly these
// rows (TestAllowed_MatchesArchitectureDoc).
var allowed = map[string][]string{
	"structs":                 {},
	"state":                   {"structs"},
	"state/statetest":         {"structs", "state"},
	"state/stream":            {"structs"}, // the event stream's broker (the FSM owns it)
	"fsm":                     {"structs", "state", "state/stream"},
	"acl":                     {"structs"},
	"tlsutil":                 {},
	"tlsutil/tlsutiltest":     {"tlsutil"},
	"rpc":                     {"structs", "tlsutil", "internal/backoff", "internal/telemetry"},
	"server":                  {"structs", "state", "fsm", "rpc", "acl", "tlsutil", "server/...", "internal/backoff", "internal/clock", "internal/clock/clocktest", "internal/telemetry"},
	"server/aclreap":          {"structs", "state", "internal/clock"},                       // the leader's reaper of expired ACL tokens; never server
	"server/drainer":          {"structs", "state", "internal/backoff", "internal/clock"},   // the leader's node drainer; never server
	"server/gc":               {"structs", "state", "internal/backoff", "internal/clock"},   // the leader's garbage collection; never server
	"server/heartbeat":        {"structs", "state", "internal/clock", "internal/telemetry"}, // the leader's node TTL timers; never server
	"server/keyring":          {"structs", "internal/atomicfile"},
	"server/keyreplicate":     {"structs", "state", "internal/backoff", "internal/clock"},         // root key material between the servers; never server
	"server/snapshotfile":     {"structs"},                                                        // the operator snapshot file: tar.gz of meta, FSM state, checksums
	"server/scheduler":        {"structs", "state", "internal/clock", "internal/clock/clocktest"}, // the planner and the job watcher; never server
	"server/servertest":       {"structs", "state", "fsm", "rpc", "acl", "tlsutil", "tlsutil/tlsutiltest", "server", "internal/testlog"},
	"server/volumewatcher":    {"structs", "state", "internal/backoff", "internal/clock", "internal/clock/clocktest", "internal/telemetry"}, // the leader's claim release; never server
	"client":                  {"structs", "rpc", "tlsutil", "client/...", "internal/atomicfile", "internal/backoff"},
	"client/csi":              {"structs", "internal/telemetry"}, // the CSI gRPC client: a leaf but for its call metrics
	"client/clienttest":       {"structs", "rpc", "tlsutil", "client/...", "internal/testlog"},
	"client/dynamicplugins":   {"structs"}, // the plugin registry: never the plugin manager, which consumes it
	"client/pluginmanager":    {"structs", "client/...", "internal/backoff"},
	"client/drivers/exec":     {"structs", "client/internal/beneath"},
	"client/internal/beneath": {}, // openat2 beneath an alloc dir: a leaf
	"api":                     {"structs"},
	"cmd":                     {"*"},

	// The docker task driver and its tests' image builds.
	"client/drivers/docker":            {"structs", "internal/backoff", "client/internal/beneath"}, // never the exec driver or the allocrunner
	"client/drivers/docker/dockertest": {"internal/testlog"},                                       // the Docker client, and skips that fail in CI

	// internal/: leaf libraries.
	"internal/testlog":                 {},
	"internal/atomicfile":              {}, // crash-safe file replacement, for the client's state and the servers' keys
	"internal/backoff":                 {}, // the one retry policy, for client, server and rpc
	"internal/clock":                   {}, // the leader's injected time
	"internal/clock/clocktest":         {"internal/clock"},
	"internal/telemetry":               {},                                         // the agent's metrics registry
	"internal/telemetry/telemetrytest": {"internal/telemetry", "internal/testlog"}, // checks of a scrape (promtool; required in CI)
	"internal/tools":                   {},                                         // importcheck; mockdriver is a module of its own

	// harness/: the harnesses that run berth whole.
	"harness/integration": {"*"},
	"harness/chaos":       {"*"},
	"harness/chaos/check": {}, // pure logic over recorded data: a leaf
	"harness/loadtest":    {"*"},
	"harness/fleet":       {"*"},
	"harness/agentproc":   {"api", "client/clienttest", "client/drivers/exec", "internal/testlog"}, // the process harnesses' process control
}

// grpcAllowed may import the CSI spec and gRPC.
var grpcAllowed = []string{"client/csi", "cmd/berth-hostpath"}

var grpcPrefixes = []string{"google.golang.org/grpc", "github.com/container-storage-interface/spec"}

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func main() {
	bad, err := check(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "importcheck:", err)
		os.Exit(2)
	}
	for _, b := range bad {
		fmt.Println(b)
	}
	if len(bad) > 0 {
		fmt.Printf("importcheck: %d forbidden import(s); see the package table in docs/architecture.md\n", len(bad))
		os.Exit(1)
	}
}

func check(r io.Reader) ([]string, error) {
	dec := json.NewDecoder(r)
	var bad []string
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		bad = append(bad, checkPackage(p)...)
	}
	sort.Strings(bad)
	return bad, nil
}

func checkPackage(p pkg) []string {
	self, ok := rel(p.ImportPath)
	if !ok {
		return nil
	}
	var bad []string
	for _, imp := range p.Imports {
		if why := forbidden(self, imp, false); why != "" {
			bad = append(bad, fmt.Sprintf("%s imports %s: %s", self, imp, why))
		}
	}
	for _, imp := range append(append([]string{}, p.TestImports...), p.XTestImports...) {
		if why := forbidden(self, imp, true); why != "" {
			bad = append(bad, fmt.Sprintf("%s (tests) import %s: %s", self, imp, why))
		}
	}
	return bad
}

// forbidden says why self may not import imp, or "" when it may.
func forbidden(self, imp string, test bool) string {
	for _, g := range grpcPrefixes {
		if strings.HasPrefix(imp, g) && !underAny(self, grpcAllowed) {
			return "only client/csi may use the CSI spec and gRPC"
		}
	}
	target, ok := rel(imp)
	if !ok || target == self {
		return ""
	}
	// The layers come first, so that no test exception below lets a
	// harness in ("harness/loadtest" ends in "test") or an internal/
	// library's tests reach up.
	if under(target, harnessDir) && !under(self, harnessDir) {
		return harnessDir + "/ is a layer of its own: only another harness may import a harness"
	}
	if under(self, internalDir) && !under(target, internalDir) {
		return internalDir + "/ holds leaf libraries: they may import only other " + internalDir + "/ packages"
	}
	if test && (strings.HasSuffix(target, "test") || target == "internal/testlog") {
		return "" // test helper packages (statetest, servertest, ...) serve tests anywhere
	}
	rule, ok := ruleFor(self)
	if !ok {
		return "package is not in the import table; add it to internal/tools/importcheck and docs/architecture.md"
	}
	for _, a := range rule {
		root, subtree := strings.CutSuffix(a, "/...")
		if a == "*" || target == a || subtree && (target == root || strings.HasPrefix(target, root+"/")) {
			return ""
		}
	}
	return fmt.Sprintf("%s may import only %v", self, rule)
}

func ruleFor(self string) ([]string, bool) {
	best := ""
	for k := range allowed {
		if (self == k || strings.HasPrefix(self, k+"/")) && len(k) > len(best) {
			best = k
		}
	}
	r, ok := allowed[best]
	return r, ok && best != ""
}

func underAny(self string, roots []string) bool {
	for _, r := range roots {
		if under(self, r) {
			return true
		}
	}
	return false
}

// under says whether p is root or inside it.
func under(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+"/")
}

func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	if strings.HasPrefix(path, module+"/") {
		return strings.TrimPrefix(path, module+"/"), true
	}
	return "", false
}
