package command

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// The usage section: one row per claim with a report, its share of the
// total, the condition (normal, abnormal with the plugin's words, or the
// collection's error), nothing when no claim has a report.
func TestVolumeUsage_Rows(t *testing.T) {
	at := time.Date(2026, 11, 28, 1, 40, 12, 0, time.UTC)
	v := &structs.CSIVolume{ID: "data",
		WriteClaims: map[string]*structs.CSIVolumeClaim{"a1111111-0000": {AllocID: "a1111111-0000", NodeID: "n1111111-0000",
			Usage: &structs.CSIVolumeUsage{Bytes: &structs.CSIUsageAmount{Used: 1 << 20, Total: 64 << 20},
				Inodes: &structs.CSIUsageAmount{Used: 3, Total: 1000}, Condition: &structs.CSIVolumeCondition{}, CollectedAt: at}}},
		ReadClaims: map[string]*structs.CSIVolumeClaim{
			"b2222222-0000": {AllocID: "b2222222-0000", NodeID: "n2222222-0000", Usage: &structs.CSIVolumeUsage{
				Condition: &structs.CSIVolumeCondition{Abnormal: true, Message: "INACCESSIBLE VolumeDirMissing:\n gone"}, CollectedAt: at}},
			"c3333333-0000": {AllocID: "c3333333-0000", NodeID: "n3333333-0000", Usage: &structs.CSIVolumeUsage{
				Error: "NodeGetVolumeStats: rpc error: code = Unavailable", CollectedAt: at}},
			"d4444444-0000": {AllocID: "d4444444-0000", NodeID: "n4444444-0000"},
		},
	}
	var out strings.Builder
	(&meta{stdout: &out}).volumeUsage(v, false)
	got := out.String()
	must.StrContains(t, got, "Usage")
	lines := strings.Split(strings.TrimSpace(got), "\n")
	must.Len(t, 5, lines, must.Sprint(got)) // title, header, three reports
	must.RegexMatch(t, regexpOf(`a1111111 +1\.0 MiB \(2%\) +64\.0 MiB +3 of 1000 +normal`), got)
	must.RegexMatch(t, regexpOf(`b2222222 +<unknown> +<unknown> +<unknown> +abnormal: INACCESSIBLE VolumeDirMissing: gone`), got)
	must.RegexMatch(t, regexpOf(`c3333333 .*collection failed: NodeGetVolumeStats: rpc error: code = Unavailable`), got)
	must.StrNotContains(t, got, "d4444444")

	out.Reset()
	(&meta{stdout: &out}).volumeUsage(&structs.CSIVolume{ID: "idle"}, false)
	must.EqOp(t, "", out.String())
}

func regexpOf(s string) *regexp.Regexp { return regexp.MustCompile(s) }
