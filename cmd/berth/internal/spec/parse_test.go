package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

const fullHCL = `# a volume that exists outside berth
id           = "data"
namespace    = "prod"
type         = "csi"
plugin_id    = "hostpath"
external_id  = "vol-0123"
capacity_min = "1GiB"
capacity_max = "2 GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

capability {
  access_mode     = "single-node-reader-only"
  attachment_mode = "block-device"
}

mount_options {
  fs_type     = "ext4"
  mount_flags = ["noatime", "uid=1000"]
}

topology_request {
  required {
    topology { segments = { zone = "a", rack = "r1" } }
    topology { segments = { zone = "b" } }
  }
  preferred {
    topology { segments = { zone = "b" } }
  }
}

secrets    { token = "s3cret" }
parameters {
  replicas = 3
  fast     = true
}
context    { origin = "manual" }
`

const fullJSON = `{
  "id": "data",
  "namespace": "prod",
  "type": "csi",
  "plugin_id": "hostpath",
  "external_id": "vol-0123",
  "capacity_min": "1GiB",
  "capacity_max": "2 GiB",
  "capability": [
    {"access_mode": "single-node-writer", "attachment_mode": "file-system"},
    {"access_mode": "single-node-reader-only", "attachment_mode": "block-device"}
  ],
  "mount_options": {"fs_type": "ext4", "mount_flags": ["noatime", "uid=1000"]},
  "topology_request": {"required": {"topology": [
    {"segments": {"zone": "a", "rack": "r1"}},
    {"segments": {"zone": "b"}}
  ]}, "preferred": {"topology": [{"segments": {"zone": "b"}}]}},
  "secrets": {"token": "s3cret"},
  "parameters": {"replicas": 3, "fast": true},
  "context": {"origin": "manual"}
}`

const fullPascalJSON = `{
  "ID": "data",
  "Namespace": "prod",
  "PluginID": "hostpath",
  "ExternalID": "vol-0123",
  "RequestedCapacityMin": 1073741824,
  "RequestedCapacityMax": 2147483648,
  "RequestedCapabilities": [
    {"AccessMode": "single-node-writer", "AttachmentMode": "file-system"},
    {"AccessMode": "single-node-reader-only", "AttachmentMode": "block-device"}
  ],
  "MountOptions": {"FSType": "ext4", "MountFlags": ["noatime", "uid=1000"]},
  "Topologies": [{"Segments": {"zone": "a", "rack": "r1"}}, {"Segments": {"zone": "b"}}],
  "PreferredTopologies": [{"Segments": {"zone": "b"}}],
  "Secrets": {"token": "s3cret"},
  "Parameters": {"replicas": "3", "fast": "true"},
  "Context": {"origin": "manual"}
}`

func wantFull() *api.VolumeSpec {
	return &api.VolumeSpec{
		ID: "data", Name: "data", Namespace: "prod",
		PluginID: "hostpath", ExternalID: "vol-0123",
		RequestedCapacityMin: 1 << 30, RequestedCapacityMax: 2 << 30,
		RequestedCapabilities: []*structs.CSIVolumeCapability{
			{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem},
			{AccessMode: structs.CSIVolumeAccessModeSingleNodeReader, AttachmentMode: structs.CSIVolumeAttachmentModeBlockDevice},
		},
		MountOptions: &api.MountOptions{FSType: "ext4", MountFlags: []string{"noatime", "uid=1000"}},
		Topologies: []*structs.CSITopology{
			{Segments: map[string]string{"zone": "a", "rack": "r1"}},
			{Segments: map[string]string{"zone": "b"}},
		},
		PreferredTopologies: []*structs.CSITopology{{Segments: map[string]string{"zone": "b"}}},
		Secrets:             map[string]string{"token": "s3cret"},
		Parameters:          map[string]string{"replicas": "3", "fast": "true"},
		Context:             map[string]string{"origin": "manual"},
	}
}

func TestParseVolume_FullSpec_AllSyntaxes(t *testing.T) {
	cases := []struct {
		name, file, src string
	}{
		{"hcl", "data.hcl", fullHCL},
		{"json by extension", "data.json", fullJSON},
		{"json by first byte", "data.spec", "\n  " + fullJSON},
		{"api json", "data.json", fullPascalJSON},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseVolume(tc.file, []byte(tc.src))
			must.NoError(t, err)
			must.Eq(t, wantFull(), got)
			// Secrets and mount flags survive parsing unredacted.
			must.EqOp(t, "s3cret", got.Secrets["token"])
			must.EqOp(t, "uid=1000", got.MountOptions.MountFlags[1])
		})
	}
}

func TestParseVolume_Minimal_NameDefaultsToID(t *testing.T) {
	src := `
id        = "scratch"
type      = "csi"
plugin_id = "hostpath"
capability {
  access_mode     = "multi-node-multi-writer"
  attachment_mode = "file-system"
}
`
	got, err := ParseVolume("scratch.hcl", []byte(src))
	must.NoError(t, err)
	must.EqOp(t, "scratch", got.Name)
	must.Nil(t, got.MountOptions)
	must.Nil(t, got.Secrets)
	must.Zero(t, got.RequestedCapacityMin)
}

func TestParseVolumeFile_ReadsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data.hcl")
	must.NoError(t, os.WriteFile(path, []byte(fullHCL), 0o600))
	got, err := ParseVolumeFile(path)
	must.NoError(t, err)
	must.EqOp(t, "data", got.ID)

	_, err = ParseVolumeFile(filepath.Join(dir, "missing.hcl"))
	must.ErrorContains(t, err, "missing.hcl")
	must.ErrorContains(t, err, "check the file's path")
}

// base is a valid HCL spec body that error cases extend.
const base = `id        = "data"
type      = "csi"
plugin_id = "hostpath"
`

const goodCap = `capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`

func TestParseVolume_Errors_NameFileLineField(t *testing.T) {
	cases := []struct {
		name      string
		file      string
		src       string
		wantLine  int
		wantField string
		wantMsg   string
	}{
		{"empty file", "v.hcl", "  \n", 1, "", "the volume spec is empty"},
		{"hcl syntax", "v.hcl", base + "capability {\n  access_mode = \n}\n", 5, "", "v.hcl:5:"},
		{"unknown top-level field", "v.hcl", base + goodCap + "plugin = \"x\"\n", 8, "plugin", `v.hcl:8: unknown field "plugin"; did you mean "plugin_id"?`},
		{"unknown field far from any", "v.hcl", base + goodCap + "zzzzzzzz = 1\n", 8, "zzzzzzzz", `valid fields are id, name`},
		{"misspelt capability field", "data.hcl", base + "capability {\n  acess_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n",
			5, "capability.acess_mode", `data.hcl:5: capability: unknown field "acess_mode"; did you mean "access_mode"?`},
		{"missing id", "v.hcl", "type = \"csi\"\nplugin_id = \"hp\"\n" + goodCap, 1, "id", "id: missing"},
		{"missing plugin_id", "v.hcl", "id = \"data\"\ntype = \"csi\"\n" + goodCap, 1, "plugin_id", "plugin_id: missing"},
		{"missing type", "v.hcl", "id = \"data\"\nplugin_id = \"hp\"\n" + goodCap, 1, "type", `type: missing; add type = "csi"`},
		{"type not csi", "v.hcl", "id = \"data\"\ntype = \"host\"\nplugin_id = \"hp\"\n" + goodCap, 2, "type", `type "host" is not supported; berth volumes are type = "csi"`},
		{"missing capability", "v.hcl", base, 1, "capability", "capability: missing"},
		{"id not a string", "v.hcl", "id = 5\ntype = \"csi\"\nplugin_id = \"hp\"\n" + goodCap, 1, "id", "id must be a string, not a number; put it in quotes"},
		{"id empty", "v.hcl", "id = \"\"\ntype = \"csi\"\nplugin_id = \"hp\"\n" + goodCap, 1, "id", `id is empty; every volume needs one`},
		{"plugin_id empty", "v.hcl", "id = \"data\"\ntype = \"csi\"\nplugin_id = \" \"\n" + goodCap, 3, "plugin_id", `plugin_id is empty; name the CSI plugin`},
		{"id with slash", "v.hcl", "id = \"a/b\"\ntype = \"csi\"\nplugin_id = \"hp\"\n" + goodCap, 1, "id", `v.hcl:1: id: volume ID "a/b" must not contain '/'`},
		// Names are checked by the servers' rule (structs.ValidateName).
		{"id with a leading dot", "v.hcl", "id = \".data\"\ntype = \"csi\"\nplugin_id = \"hp\"\n" + goodCap, 1, "id", `v.hcl:1: id: volume ID ".data" must not start with '.'`},
		{"plugin_id with a space", "v.hcl", "id = \"data\"\ntype = \"csi\"\nplugin_id = \"h p\"\n" + goodCap, 3, "plugin_id",
			`v.hcl:3: plugin_id: plugin ID "h p" must not contain ' '`},
		{"namespace with a slash", "v.hcl", base + goodCap + "namespace = \"a/b\"\n", 8, "namespace", `v.hcl:8: namespace: namespace "a/b" must not contain '/'`},
		{"api json ID too long", "v.json", "{\"ID\": \"" + strings.Repeat("x", 129) + "\", \"PluginID\": \"hp\",\n \"RequestedCapabilities\": [{\"AccessMode\": \"single-node-writer\", \"AttachmentMode\": \"file-system\"}]}",
			1, "id", "is 129 bytes long; the most is 128"},
		{"id set twice (json)", "v.json", `{"id": "a",` + "\n" + `"id": "b", "type": "csi", "plugin_id": "hp", "capability": {"access_mode": "single-node-writer", "attachment_mode": "file-system"}}`,
			2, "id", "id is set twice (first at line 1)"},
		{"bad access mode", "v.hcl", base + "capability {\n  access_mode = \"single-node-write\"\n  attachment_mode = \"file-system\"\n}\n",
			5, "capability.access_mode", `capability: access_mode "single-node-write" is not valid; one of "single-node-reader-only", "single-node-writer", "multi-node-reader-only", "multi-node-single-writer", "multi-node-multi-writer"; did you mean "single-node-writer"?`},
		{"bad attachment mode", "v.hcl", base + "capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"filesystem\"\n}\n",
			6, "capability.attachment_mode", `capability: attachment_mode "filesystem" is not valid; one of "file-system", "block-device"; did you mean "file-system"?`},
		{"capability missing attachment mode", "v.hcl", base + "capability {\n  access_mode = \"single-node-writer\"\n}\n",
			4, "capability.attachment_mode", `capability: missing attachment_mode; one of "file-system", "block-device"`},
		{"capability as string", "v.hcl", base + "capability = \"rw\"\n", 4, "capability", "capability must be a block (capability { ... }), not a string"},
		{"capability with label", "v.hcl", base + "capability \"x\" {\n}\n", 4, "capability", `capability takes no label; write capability { ... } without "x"`},
		{"bad size unit", "v.hcl", base + goodCap + "capacity_min = \"1GiG\"\n", 8, "capacity_min", `capacity_min: "1GiG" has an unknown unit "GiG"; use one of B, KB, KiB, MB, MiB, GB, GiB, TB, TiB`},
		{"bad size", "v.hcl", base + goodCap + "capacity_max = \"lots\"\n", 8, "capacity_max", `capacity_max: "lots" has an unknown unit`},
		{"size as bool", "v.hcl", base + goodCap + "capacity_max = true\n", 8, "capacity_max", `capacity_max must be a size such as "10GiB" or a number of bytes, not a bool`},
		{"min above max", "v.hcl", base + goodCap + "capacity_min = \"2GiB\"\ncapacity_max = \"1GiB\"\n", 8, "capacity_min", "capacity_min: 2147483648 bytes is more than capacity_max (1073741824 bytes)"},
		{"snapshot and clone", "v.hcl", base + goodCap + "snapshot_id = \"s\"\nclone_id = \"c\"\n", 9, "clone_id",
			"clone_id: set snapshot_id or clone_id, not both (snapshot_id is set at line 8)"},
		{"clone and snapshot", "v.hcl", base + "clone_id = \"c\"\n" + goodCap + "snapshot_id = \"s\"\n", 9, "snapshot_id",
			"snapshot_id: set snapshot_id or clone_id, not both (clone_id is set at line 4)"},
		{"snapshot and clone (json)", "v.json", `{"id": "data", "type": "csi", "plugin_id": "hp",` + "\n" + `"clone_id": "c",` + "\n" +
			`"capability": {"access_mode": "single-node-writer", "attachment_mode": "file-system"},` + "\n" + `"snapshot_id": "s"}`, 4, "snapshot_id",
			"not both (clone_id is set at line 2)"},
		{"unknown size unit", "v.hcl", base + goodCap + "capacity_min = \"10QB\"\n", 8, "capacity_min", `capacity_min: "10QB" has an unknown unit "QB"`},
		{"max below min", "v.hcl", base + goodCap + "capacity_max = \"1GiB\"\ncapacity_min = \"10 GiB\"\n", 9, "capacity_min",
			"capacity_min: 10737418240 bytes is more than capacity_max (1073741824 bytes)"},
		{"mount flags not a list", "v.hcl", base + goodCap + "mount_options {\n  mount_flags = \"noatime\"\n}\n", 9, "mount_options.mount_flags", `mount_options: mount_flags must be a list of strings such as ["a", "b"], not a string`},
		{"mount options unknown field", "v.hcl", base + goodCap + "mount_options {\n  fstype = \"ext4\"\n}\n", 9, "mount_options.fstype", `mount_options: unknown field "fstype"; did you mean "fs_type"?`},
		{"secret value not a string", "v.hcl", base + goodCap + "secrets {\n  token = [\"a\"]\n}\n", 9, "secrets.token", "secrets: token must be a string, not a list"},
		{"bare word", "v.hcl", "id = \"data\"\ntype = csi\nplugin_id = \"hp\"\n" + goodCap, 2, "type", `type: csi is a bare word; put it in quotes: "csi"`},
		{"id as a block", "v.hcl", "id \"x\" {\n}\ntype = \"csi\"\nplugin_id = \"hp\"\n" + goodCap, 1, "id", "id must be a string, not a block"},
		{"variables not allowed", "v.hcl", base + goodCap + "external_id = var.x\n", 8, "external_id", "external_id: must be a literal value"},
		{"for expressions not allowed", "v.hcl", base + goodCap + "parameters {\n  n = [for x in [1, 2]: [for y in [1, 2]: x]]\n}\n", 9, "parameters.n",
			"parameters.n: must be a literal value (for expressions are not allowed here)"},
		{"preferred topology missing segments", "v.hcl", base + goodCap + "topology_request {\n  preferred {\n    topology {\n    }\n  }\n}\n",
			10, "topology_request.preferred.topology.segments", "topology_request: preferred: topology: missing segments"},
		{"topology missing segments", "v.hcl", base + goodCap + "topology_request {\n  required {\n    topology {\n    }\n  }\n}\n",
			10, "topology_request.required.topology.segments", "topology_request: required: topology: missing segments"},
		{"topology segment misspelt", "v.hcl", base + goodCap + "topology_request {\n  required {\n    topology { segment = { zone = \"a\" } }\n  }\n}\n",
			10, "topology_request.required.topology.segment", `topology_request: required: topology: unknown field "segment"; did you mean "segments"?`},
		{"json syntax", "v.json", "{\n  \"id\": \"data\",\n  \"type\": \"csi\",,\n}", 3, "", "v.json:3: malformed JSON"},
		{"json truncated", "v.json", "{\n  \"id\": \"data\",\n", 3, "", "the file ends early"},
		{"json not an object", "v.json", "[1, 2]", 1, "", "must be one object"},
		{"json trailing data", "v.json", "{\"id\": \"a\"}\n{}", 2, "", "more data after the volume's object"},
		{"json unknown field", "v.json", "{\n  \"id\": \"data\",\n  \"type\": \"csi\",\n  \"plugin_idd\": \"hp\"\n}", 4, "plugin_idd", `v.json:4: unknown field "plugin_idd"; did you mean "plugin_id"?`},
		{"json wrong type", "v.json", "{\n  \"id\": \"data\",\n  \"type\": \"csi\",\n  \"plugin_id\": [\"hp\"]\n}", 4, "plugin_id", "plugin_id must be a string, not a list"},
		{"api json bad mode", "v.json", "{\"ID\": \"data\", \"PluginID\": \"hp\",\n \"RequestedCapabilities\": [{\"AccessMode\": \"rw\",\n \"AttachmentMode\": \"file-system\"}]}", 2, "capability.access_mode", `capability: access_mode "rw" is not valid`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseVolume(tc.file, []byte(tc.src))
			must.Error(t, err)
			var se *Error
			must.True(t, errors.As(err, &se), must.Sprintf("not a *spec.Error: %v", err))
			// Find the error the case is about among all reported.
			var found *Error
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.Contains(line, tc.wantMsg) || strings.Contains(tc.file+":"+line, tc.wantMsg) {
					found = &Error{}
					must.StrHasPrefix(t, tc.file+":", line, must.Sprint("every error names its file"))
					must.StrHasPrefix(t, tc.file+":"+strconv.Itoa(tc.wantLine)+":", line, must.Sprintf("wrong line in %q", line))
				}
			}
			must.NotNil(t, found, must.Sprintf("no error mentions %q; got:\n%v", tc.wantMsg, err))
			if tc.wantField != "" {
				must.True(t, hasField(err, tc.wantField), must.Sprintf("no error for field %q; got:\n%v", tc.wantField, err))
			}
		})
	}
}

// hasField reports whether any *Error in err's tree is about field.
func hasField(err error, field string) bool {
	var se *Error
	if errors.As(err, &se) && se.Field == field {
		return true
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if hasField(e, field) {
				return true
			}
		}
	}
	return false
}

func TestParseVolume_Errors_ReportsAll(t *testing.T) {
	src := `id = "data"
type = "csi"
capability {
  acess_mode = "single-node-writer"
}
`
	_, err := ParseVolume("v.hcl", []byte(src))
	must.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	must.Len(t, 3, lines, must.Sprint(err))
	must.StrHasPrefix(t, "v.hcl:1: plugin_id: missing", lines[0])
	must.StrContains(t, err.Error(), `v.hcl:3: capability: missing attachment_mode`)
	must.StrContains(t, err.Error(), `v.hcl:4: capability: unknown field "acess_mode"; did you mean "access_mode"?`)
	must.StrNotContains(t, err.Error(), "missing access_mode", must.Sprint("the misspelt field is one problem"))
}

// A misspelt required field is one problem, not also a missing field, as
// in job specs.
func TestParseVolume_MisspeltRequiredFieldIsOneProblem(t *testing.T) {
	full := base + goodCap + "topology_request {\n  required {\n    topology {\n      segments = { zone = \"a\" }\n    }\n  }\n}\n" +
		"external_id = \"vol-1\"\n"
	cases := []struct{ name, from, to, want string }{
		{"id", `id        =`, `di        =`, `v.hcl:1: unknown field "di"; did you mean "id"?`},
		{"type", `type      =`, `typ       =`, `v.hcl:2: unknown field "typ"; did you mean "type"?`},
		{"plugin_id", `plugin_id =`, `plugn_id  =`, `v.hcl:3: unknown field "plugn_id"; did you mean "plugin_id"?`},
		{"capability", `capability {`, `capabilty {`, `v.hcl:4: unknown field "capabilty"; did you mean "capability"?`},
		{"access_mode", `access_mode `, `acces_mode  `, `v.hcl:5: capability: unknown field "acces_mode"; did you mean "access_mode"?`},
		{"attachment_mode", `attachment_mode `, `atachment_mode  `, `v.hcl:6: capability: unknown field "atachment_mode"; did you mean "attachment_mode"?`},
		{"segments", `segments =`, `segment  =`, `v.hcl:11: topology_request: required: topology: unknown field "segment"; did you mean "segments"?`},
		{"external_id for register", `external_id =`, `externl_id =`, `v.hcl:15: unknown field "externl_id"; did you mean "external_id"?`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.StrContains(t, full, tc.from)
			_, err := ParseVolumeFor("v.hcl", []byte(strings.Replace(full, tc.from, tc.to, 1)), ForRegister)
			must.EqError(t, err, tc.want)
		})
	}
}

// A block on one line holds one argument, as HCL has it: more is refused
// at its line, saying what to do, and the same blocks on lines of their
// own parse.
func TestParseVolume_OneLineBlocks_RefusedAtTheirLine(t *testing.T) {
	cases := []struct {
		name, block string
		want        string
	}{
		{"two arguments", `mount_options { fs_type = "ext4"  mount_flags = ["noatime"] }`,
			"data.hcl:8: invalid single-argument block definition: A single-line block definition must end with a closing brace immediately after its single argument definition; put each argument on its own line"},
		{"two arguments with a comma", `secrets { token = "s3cret", user = "admin" }`,
			"data.hcl:8: invalid single-argument block definition: Single-line block syntax can include only one argument definition. To define multiple arguments, use the multi-line block syntax with one argument definition per line"},
		{"a nested block", `topology_request { required { topology { segments = { zone = "a" } } } }`,
			"data.hcl:8: argument definition required: A single-line block definition can contain only a single argument"},
		{"a block after another", `secrets { token = "s3cret" } context { a = "b" }`,
			"data.hcl:8: missing newline after block definition"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseVolume("data.hcl", []byte(base+goodCap+tc.block+"\n"))
			must.ErrorContains(t, err, tc.want)
			var se *Error
			must.True(t, errors.As(err, &se))
			must.EqOp(t, 8, se.Line)
		})
	}

	src := base + goodCap + `mount_options {
  fs_type     = "ext4"
  mount_flags = ["noatime"]
}
topology_request {
  required {
    topology { segments = { zone = "a", rack = "r1" } }
  }
}
secrets {
  token = "s3cret"
  user  = "admin"
}
`
	got, err := ParseVolume("data.hcl", []byte(src))
	must.NoError(t, err)
	must.Eq(t, &api.MountOptions{FSType: "ext4", MountFlags: []string{"noatime"}}, got.MountOptions)
	must.Eq(t, []*structs.CSITopology{{Segments: map[string]string{"zone": "a", "rack": "r1"}}}, got.Topologies)
	must.Eq(t, map[string]string{"token": "s3cret", "user": "admin"}, got.Secrets)
}

// interfaceExample is INTERFACE.md's volume spec, with its "{ ... }"
// placeholders emptied and every block that holds more than one argument,
// or a block, on lines of its own, as HCL needs.
const interfaceExample = `id           = "data"
name         = "data"
type         = "csi"
plugin_id    = "hostpath"
external_id  = "..."            # register only
capacity_min = "1GiB"           # create / expand
capacity_max = "2GiB"
snapshot_id  = "..."            # or clone_id; create only
capability {
  access_mode     = "single-node-writer"   # single-node-reader-only | multi-node-reader-only | multi-node-single-writer | multi-node-multi-writer
  attachment_mode = "file-system"          # or block-device
}
mount_options {
  fs_type     = "ext4"
  mount_flags = ["noatime"]
}
topology_request {
  required {
    topology { segments = { zone = "a" } }
  }
}
secrets    { token = "..." }
parameters { }
context    { }
`

func TestParseVolume_InterfaceExample_Parses(t *testing.T) {
	got, err := ParseVolume("data.hcl", []byte(interfaceExample))
	must.NoError(t, err)
	must.EqOp(t, "data", got.ID)
	must.EqOp(t, int64(2<<30), got.RequestedCapacityMax)
	must.EqOp(t, "...", got.SnapshotID)
	must.Eq(t, &api.MountOptions{FSType: "ext4", MountFlags: []string{"noatime"}}, got.MountOptions)
	must.Eq(t, []*structs.CSITopology{{Segments: map[string]string{"zone": "a"}}}, got.Topologies)
	must.Eq(t, map[string]string{"token": "..."}, got.Secrets)
	must.MapEmpty(t, got.Parameters)
}

func TestParseVolumeFor_ExternalIDByPurpose(t *testing.T) {
	withExternal := base + "external_id = \"vol-1\"\n" + goodCap
	emptyExternal := base + "external_id = \"\"\n" + goodCap
	without := base + goodCap
	cases := []struct {
		name      string
		src       string
		purpose   Purpose
		wantErr   string // "" for no error
		wantField string
	}{
		{"register with external_id", withExternal, ForRegister, "", ""},
		{"register without external_id", without, ForRegister,
			`v.hcl:1: external_id: missing; registering needs the storage provider's ID of an existing volume (to have the plugin make a new volume, use "berth volume create")`,
			"external_id"},
		{"register with empty external_id", emptyExternal, ForRegister, "v.hcl:4: external_id: missing", "external_id"},
		{"create without external_id", without, ForCreate, "", ""},
		{"create with empty external_id", emptyExternal, ForCreate, "", ""},
		{"create with external_id", withExternal, ForCreate,
			`v.hcl:4: external_id: not allowed when creating a volume; the plugin makes the volume and its external ID (to add a volume that already exists, remove external_id and use "berth volume register")`,
			"external_id"},
		{"any with external_id", withExternal, ForAny, "", ""},
		{"any without external_id", without, ForAny, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseVolumeFor("v.hcl", []byte(tc.src), tc.purpose)
			if tc.wantErr == "" {
				must.NoError(t, err)
				must.EqOp(t, "data", got.ID)
				return
			}
			must.Nil(t, got)
			must.ErrorContains(t, err, tc.wantErr)
			must.True(t, hasField(err, tc.wantField))
		})
	}
}

func TestParseVolumeFor_PurposeErrorsJoinTheOthers(t *testing.T) {
	src := `id           = "data"
type         = "csi"
plugin_id    = "hostpath"
external_id  = "vol-1"
capacity_min = "10QB"
capability {
  access_mode = "single-node-writer"
}
`
	_, err := ParseVolumeFor("data.hcl", []byte(src), ForCreate)
	must.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	must.Len(t, 3, lines, must.Sprint(err))
	must.StrHasPrefix(t, "data.hcl:4: external_id: not allowed when creating a volume", lines[0])
	must.StrHasPrefix(t, `data.hcl:5: capacity_min: "10QB" has an unknown unit`, lines[1])
	must.StrHasPrefix(t, "data.hcl:6: capability: missing attachment_mode", lines[2])
}

func TestParseVolumeFileFor_ReadsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data.hcl")
	must.NoError(t, os.WriteFile(path, []byte(fullHCL), 0o600))
	got, err := ParseVolumeFileFor(path, ForRegister)
	must.NoError(t, err)
	must.EqOp(t, "vol-0123", got.ExternalID)

	_, err = ParseVolumeFileFor(path, ForCreate)
	must.ErrorContains(t, err, path+":6: external_id: not allowed when creating a volume")

	_, err = ParseVolumeFileFor(filepath.Join(dir, "missing.hcl"), ForCreate)
	must.ErrorContains(t, err, "check the file's path")
}

func TestParseVolumeFor_CreateSpec_AllCreateFields(t *testing.T) {
	src := `id           = "data"
type         = "csi"
plugin_id    = "hostpath"
capacity_min = "1GiB"
capacity_max = "2GiB"
clone_id     = "vol-src"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
topology_request {
  required {
    topology { segments = { zone = "a" } }
  }
}
secrets { token = "s3cret" }
`
	got, err := ParseVolumeFor("data.hcl", []byte(src), ForCreate)
	must.NoError(t, err)
	must.EqOp(t, int64(1<<30), got.RequestedCapacityMin)
	must.EqOp(t, int64(2<<30), got.RequestedCapacityMax)
	must.EqOp(t, "vol-src", got.CloneID)
	must.EqOp(t, "", got.SnapshotID)
	must.Eq(t, []*structs.CSITopology{{Segments: map[string]string{"zone": "a"}}}, got.Topologies)
	must.EqOp(t, "s3cret", got.Secrets["token"])
}
