package spec

import (
	"fmt"

	"github.com/berth-csi/berth/structs"
)

// checkGroupVolumes checks each volume request of a group against its
// count and the job's type with the servers' own rule
// (structs.VolumeRequest.UseProblems), each problem on the line of the
// field it is about.
func (p *parser) checkGroupVolumes(tg *structs.TaskGroup, vols map[string]*groupVolume, jobType string, countLine int) {
	for _, alias := range volumeAliases(vols) {
		v := vols[alias]
		for _, pr := range v.req.UseProblems(tg.Count, jobType, fmt.Sprintf(" (line %d)", countLine)) {
			line := v.lines[pr.Field]
			if pr.Field == "access_mode" {
				line = lineOr(v.lines, "access_mode", v.line)
			}
			p.bad(line, v.scope, pr.Field, "%s", pr.Message)
		}
	}
}
