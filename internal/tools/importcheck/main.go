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

// allowed maps a package (by path inside the module; the longest matching
// prefix wins) to the berth packages it may import: an exact path, a
// subtree ("client/..."), or "*" for any.
var allowed = map[string][]string{
	"structs":                  {},
	"state":                    {"structs"},
	"state/statetest":          {"structs", "state"},
	"state/stream":             {"structs"}, // the event stream's broker (the FSM owns it)
	"fsm":                      {"structs", "state", "state/stream"},
	"acl":                      {"structs"},
	"tlsutil":                  {},
	"tlsutil/tlsutiltest":      {"tlsutil"},
	"rpc":                      {"structs", "tlsutil", "internal/backoff", "internal/telemetry"},
	"server":                   {"structs", "state", "fsm", "rpc", "acl", "tlsutil", "server/...", "internal/backoff", "internal/clock", "internal/clock/clocktest", "internal/telemetry"},
	"server/keyring":           {"structs", "internal/atomicfile"},
	"server/snapshotfile":      {"structs"},                                                        // the operator snapshot file: tar.gz of meta, FSM state, checksums
	"server/scheduler":         {"structs", "state", "internal/clock", "internal/clock/clocktest"}, // the planner and the job watcher; never server
	"server/servertest":        {"structs", "state", "fsm", "rpc", "acl", "tlsutil", "tlsutil/tlsutiltest", "server", "internal/testlog"},
	"server/volumewatcher":     {"structs", "state", "internal/backoff", "internal/clock", "internal/clock/clocktest", "internal/telemetry"}, // the leader's claim release; never server
	"client":                   {"structs", "rpc", "tlsutil", "client/...", "internal/atomicfile", "internal/backoff"},
	"client/csi":               {"structs", "internal/telemetry"}, // the CSI gRPC client: a leaf but for its call metrics
	"client/clienttest":        {"structs", "rpc", "tlsutil", "client/...", "internal/testlog"},
	"api":                      {"structs"},
	"cmd":                      {"*"},
	"internal/testlog":         {},
	"internal/atomicfile":      {}, // crash-safe file replacement, for the client's state and the servers' keys
	"internal/backoff":         {}, // the one retry policy, for client, server and rpc
	"internal/clock":           {}, // the leader's injected time
	"internal/telemetry":       {}, // the agent's metrics registry
	"internal/clock/clocktest": {"internal/clock"},
	"internal/integration":     {"*"},
	"internal/chaos":           {"*"},
	"internal/chaos/check":     {}, // pure logic over recorded data: a leaf
	"internal/loadtest":        {"*"},
	"internal/agentproc":       {"client/clienttest", "client/drivers/exec"}, // the harnesses' process control
	"internal/tools":           {},

	// The docker task driver and its tests' image builds.
	"client/drivers/docker":            {"structs", "internal/backoff", "client/internal/beneath"}, // never the exec driver or the allocrunner
	"client/drivers/docker/dockertest": {},                                                         // the Docker client only
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
		fmt.Printf("importcheck: %d forbidden import(s); see the package table in DESIGN.md\n", len(bad))
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
	if test && (strings.HasSuffix(target, "test") || target == "internal/testlog") {
		return "" // harness packages (statetest, servertest, ...) serve tests anywhere
	}
	rule, ok := ruleFor(self)
	if !ok {
		return "package is not in the import table; add it to internal/tools/importcheck"
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
		if self == r || strings.HasPrefix(self, r+"/") {
			return true
		}
	}
	return false
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
