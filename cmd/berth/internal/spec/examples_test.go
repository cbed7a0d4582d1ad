package spec

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// repoRoot is the module's root, from this package's directory.
var repoRoot = filepath.Join("..", "..", "..", "..")

// Every example parses with the parser its name says: *-job.hcl as a job
// spec, *-volume.hcl as a volume spec for create (the examples create
// their volumes). The agent's configs, agent-*.hcl, are the agent
// package's to parse (TestParseConfig_Examples).
func TestExamples_EveryFileParses(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(repoRoot, "examples", "*.hcl"))
	must.NoError(t, err)
	must.SliceNotEmpty(t, paths)
	for _, path := range paths {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			switch {
			case strings.HasSuffix(name, "-job.hcl"):
				_, err := ParseJobFile(path)
				must.NoError(t, err)
			case strings.HasSuffix(name, "-volume.hcl"):
				_, err := ParseVolumeFileFor(path, ForCreate)
				must.NoError(t, err)
			case strings.HasPrefix(name, "agent-"):
				src, err := os.ReadFile(path)
				must.NoError(t, err)
				_, diags := hclsyntax.ParseConfig(src, path, hcl.Pos{Line: 1, Column: 1})
				must.False(t, diags.HasErrors(), must.Sprint(diags))
			default:
				t.Fatalf("%s: name it *-job.hcl, *-volume.hcl or agent-*.hcl, so that a test parses it as what it is", name)
			}
		})
	}
}

// The examples are what the README walks through: they must keep parsing.
func TestExamples_Parse(t *testing.T) {
	dir := filepath.Join(repoRoot, "examples")
	job, err := ParseJobFile(filepath.Join(dir, "hostpath-job.hcl"))
	must.NoError(t, err)
	must.EqOp(t, "writer", job.ID)
	must.EqOp(t, structs.JobTypeService, job.Type)
	must.Len(t, 1, job.TaskGroups)
	tg := job.TaskGroups[0]
	must.Eq(t, &structs.VolumeRequest{Name: "data", Type: "csi", Source: "data",
		AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem},
		tg.Volumes["data"])
	task := tg.Tasks[0]
	must.Eq(t, map[string]any{"command": "/bin/sh", "args": []string{"-c", "date -u +%FT%TZ | tee -a /data/out.txt; sleep 3600"}}, task.Config)
	must.Eq(t, []*structs.VolumeMount{{Volume: "data", Destination: "/data", PropagationMode: "private"}}, task.VolumeMounts)

	plugin, err := ParseJobFile(filepath.Join(dir, "hostpath-plugin-job.hcl"))
	must.NoError(t, err)
	must.EqOp(t, structs.JobTypeSystem, plugin.Type)
	pt := plugin.TaskGroups[0].Tasks[0]
	must.Eq(t, &structs.TaskCSIPluginConfig{ID: "hostpath", Type: structs.CSIPluginTypeMonolith, MountDir: "/csi",
		HealthTimeout: int64(30 * time.Second)}, pt.CSIPluginConfig)
	must.Eq[any](t, []string{"-root", "/var/lib/berth-hostpath/${BERTH_NODE_NAME}", "-node-id", "${BERTH_NODE_NAME}",
		"-topology", "zone=${BERTH_NODE_NAME}"}, pt.Config["args"])

	vol, err := ParseVolumeFileFor(filepath.Join(dir, "hostpath-volume.hcl"), ForCreate)
	must.NoError(t, err)
	must.EqOp(t, "data", vol.ID)
	must.EqOp(t, "hostpath", vol.PluginID)
	must.Eq(t, []*structs.CSIVolumeCapability{{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter,
		AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}}, vol.RequestedCapabilities)
}

// hclFence, shFence and catHCL find the HCL the docs show: fenced ```hcl
// blocks, and in shell sessions the text a "$ cat NAME.hcl" prints.
var (
	hclFence = regexp.MustCompile("(?s)```hcl\n(.*?)```")
	shFence  = regexp.MustCompile("(?s)```sh\n(.*?)```")
	catHCL   = regexp.MustCompile(`(?s)\$ cat \S+\.hcl\n(.*?)(?:\n\$|$)`)
)

// The HCL in README.md and docs/ is HCL as hashicorp/hcl/v2 reads it, so
// that what people copy from it parses.
func TestDocs_HCLIsHCL(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	must.NoError(t, err)
	docs = append(docs, filepath.Join(repoRoot, "README.md"))
	found := 0
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		must.NoError(t, err)
		var blocks []string
		for _, m := range hclFence.FindAllStringSubmatch(string(text), -1) {
			blocks = append(blocks, m[1])
		}
		for _, sh := range shFence.FindAllStringSubmatch(string(text), -1) {
			for _, m := range catHCL.FindAllStringSubmatch(sh[1], -1) {
				blocks = append(blocks, m[1])
			}
		}
		for i, block := range blocks {
			found++
			_, diags := hclsyntax.ParseConfig([]byte(block), filepath.Base(doc), hcl.Pos{Line: 1, Column: 1})
			must.False(t, diags.HasErrors(), must.Sprintf("%s, HCL block %d:\n%s\n%v", doc, i+1, block, diags))
		}
	}
	must.Greater(t, 5, found, must.Sprint("the docs show HCL; the test finds none"))
}
