package main_test

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/telemetry/telemetrytest"
	"github.com/berth-csi/berth/internal/testlog"
)

// ownFamilies are the metric families berth defines (docs/metrics.md).
var ownFamilies = []string{
	"berth_rpc_requests_total", "berth_rpc_request_duration_seconds",
	"berth_raft_apply_duration_seconds", "berth_raft_commit_index", "berth_raft_leader_changes_total",
	"berth_fsm_apply_duration_seconds",
	"berth_csi_calls_total", "berth_csi_call_duration_seconds",
	"berth_csi_claims", "berth_csi_claim_release_oldest_seconds", "berth_csi_claim_release_retries_total",
	"berth_csi_plugin_instances_healthy", "berth_csi_plugin_instances_expected", "berth_csi_volumes",
	"berth_csi_volume_used_bytes", "berth_csi_volume_capacity_bytes", "berth_csi_volume_inodes_used", "berth_csi_volume_condition_abnormal",
	"berth_node_heartbeat_misses_total",
	"berth_http_requests_total", "berth_http_request_duration_seconds",
}

// TestProcess_DevAgentMetrics scrapes `berth agent -dev` after a volume
// create and a job run on the volume: berth's families are there and
// moved with the work (the CSI calls to the built-in hostpath plugin, the
// RPCs and HTTP requests behind the commands, the raft and FSM applies,
// the claim taken), raft's own go-metrics are there beside them, and
// the lint (promlint, and promtool where installed) finds nothing to say
// about berth's. Then the job stops, and the claim's release shows:
// CSIVolumeClaim entries applied, no claim left.
func TestProcess_DevAgentMetrics(t *testing.T) {
	testlog.NeedRoot(t, "the job's task mounts the volume in its own mount namespace")
	bin, a := startDevAgent(t)

	vol := writeSpec(t, "data.hcl", volumeSpec("data", `capacity_min = "64MiB"`))
	waitUntil(t, 60*time.Second, "volume create on the dev agent", func() bool {
		_, _, code := berthCLI(t, bin, a, "volume", "create", vol)
		return code == 0
	})
	// 1 MiB of data, then done: the volume's usage must show it.
	job := writeSpec(t, "writer.hcl", volumeJob("writer", 1, "data", "single-node-writer",
		"yes abcdefghijklmno | head -c 1048576 > /data/blob; sync; touch /data/written; sleep 3600"))
	out, errOut, code := berthCLI(t, bin, a, "job", "run", job)
	must.Zero(t, code, must.Sprintf("job run: %s%s", out, errOut))

	var scrape string
	waitUntil(t, 30*time.Second, "the taken claim and the volume's usage after the write in the scrape", func() bool {
		scrape = scrapeAgent(t, a)
		return sample(scrape, `berth_csi_claims{state="taken"}`) == 1 &&
			sample(scrape, `berth_csi_volume_used_bytes{namespace="default",volume="data"}`) >= 1<<20 &&
			sample(scrape, `berth_csi_volume_inodes_used{namespace="default",volume="data"}`) >= 3 // the root, blob, written
	})
	must.Eq(t, 64<<20, sample(scrape, `berth_csi_volume_capacity_bytes{namespace="default",volume="data"}`))
	must.Eq(t, 0, sample(scrape, `berth_csi_volume_condition_abnormal{namespace="default",volume="data"}`))
	status, errOut, code := berthCLI(t, bin, a, "volume", "status", "data")
	must.Zero(t, code, must.Sprintf("volume status: %s%s", status, errOut))
	must.StrContains(t, status, "Usage")
	must.RegexMatch(t, regexp.MustCompile(`1\.\d MiB \(\d+%\) +64\.0 MiB +\d+ of \d+ +normal`), status)
	for _, f := range ownFamilies {
		must.StrContains(t, scrape, "# TYPE "+f+" ", must.Sprintf("family %s", f))
	}
	for series, atLeast := range map[string]float64{
		`berth_csi_calls_total{code="OK",method="CreateVolume",plugin="hostpath"}`:                    1,
		`berth_csi_calls_total{code="OK",method="NodePublishVolume",plugin="hostpath"}`:               1,
		`berth_csi_call_duration_seconds_count{code="OK",method="Probe",plugin="hostpath"}`:           1,
		`berth_rpc_requests_total{code="OK",method="CSIVolume.Create"}`:                               1,
		`berth_rpc_requests_total{code="OK",method="Job.Register"}`:                                   1,
		`berth_rpc_request_duration_seconds_count{blocking="false",code="OK",method="Node.Register"}`: 1,
		`berth_fsm_apply_duration_seconds_count{type="CSIVolumeRegister"}`:                            1,
		`berth_fsm_apply_duration_seconds_count{type="PlanApply"}`:                                    1, // the claim is taken with the placement
		`berth_raft_apply_duration_seconds_count{type="PlanApply"}`:                                   1,
		`berth_raft_commit_index`:         1,
		`berth_raft_leader_changes_total`: 1,
		`berth_http_requests_total{method="PUT",route="/v1/volume/csi/{id}/create",status="200"}`: 1,
		`berth_http_requests_total{method="PUT",route="/v1/jobs",status="200"}`:                   1,
		`berth_csi_plugin_instances_healthy{plugin="hostpath",type="controller"}`:                 1,
		`berth_csi_plugin_instances_healthy{plugin="hostpath",type="node"}`:                       1,
		`berth_csi_volumes{plugin="hostpath",schedulable="true"}`:                                 1,
		`berth_raft_apply`: 1, // raft's own, through go-metrics
	} {
		must.GreaterEq(t, atLeast, sample(scrape, series), must.Sprint(series))
	}
	must.Eq(t, 0, sample(scrape, `berth_csi_claims{state="unpublishing"}`))
	must.Eq(t, 0, sample(scrape, `berth_csi_claim_release_retries_total{state="unpublishing"}`))
	must.Eq(t, 0, sample(scrape, `berth_node_heartbeat_misses_total`))
	must.StrNotContains(t, scrape, `volume_id`)
	t.Logf("berth's own families after volume create and job run:\n%s", ownLines(scrape))

	own, goMetrics := telemetrytest.Lint(t, scrape)
	must.SliceEmpty(t, own, must.Sprint("the lint of berth's own families"))
	t.Logf("the lint of the libraries' go-metrics families (their names, left as they are): %d complaints, e.g. %q",
		len(goMetrics), first(goMetrics))

	out, errOut, code = berthCLI(t, bin, a, "job", "stop", "writer")
	must.Zero(t, code, must.Sprintf("job stop: %s%s", out, errOut))
	waitUntil(t, 30*time.Second, "the claim freed", func() bool {
		scrape = scrapeAgent(t, a)
		return sample(scrape, `berth_csi_claims{state="taken"}`) == 0 &&
			sample(scrape, `berth_csi_claims{state="unpublishing"}`)+sample(scrape, `berth_csi_claims{state="node-detached"}`)+
				sample(scrape, `berth_csi_claims{state="controller-detached"}`) == 0
	})
	must.GreaterEq(t, 1, sample(scrape, `berth_fsm_apply_duration_seconds_count{type="CSIVolumeClaim"}`))
	must.GreaterEq(t, 1, sample(scrape, `berth_csi_calls_total{code="OK",method="NodeUnpublishVolume",plugin="hostpath"}`))
	must.Eq(t, 0, sample(scrape, `berth_csi_claim_release_oldest_seconds`))
}

// scrapeAgent is the agent's Prometheus scrape.
func scrapeAgent(t *testing.T, a *agentProc) string {
	t.Helper()
	resp, err := http.Get(a.httpAddr() + "/v1/metrics?format=prometheus")
	must.NoError(t, err)
	defer resp.Body.Close()
	must.EqOp(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return string(body)
}

// sample is the value of one series of scrape, written as the exposition
// format writes it (labels in name order); -1 when it is not there.
func sample(scrape, series string) float64 {
	for _, line := range strings.Split(scrape, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return -1
			}
			return f
		}
	}
	return -1
}

// ownLines are the scrape's lines of berth's own families, buckets left
// out.
func ownLines(scrape string) string {
	var out []string
	for _, line := range strings.Split(scrape, "\n") {
		for _, f := range ownFamilies {
			if strings.HasPrefix(line, f) && !strings.Contains(line, "_bucket{") && !strings.Contains(line, "_sum") {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
