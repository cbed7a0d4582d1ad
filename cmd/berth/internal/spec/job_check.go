package spec

import (
	"fmt"

	"github.com/berth-csi/berth/structs"
)

// checkGroupVolumes checks each volume request of a group against its
// count, as Nomad does: a volume one allocation at a time may use cannot
// serve several allocations unless each has its own (per_alloc), and the
// reader-only modes need read_only. A system job's count is ignored: it
// runs one allocation per node, and its allocations have no index to pick
// a per_alloc volume by.
func (p *parser) checkGroupVolumes(tg *structs.TaskGroup, vols map[string]*groupVolume, jobType string, countLine int) {
	count := tg.Count
	if jobType == structs.JobTypeSystem {
		count = 1
	}
	for _, alias := range volumeAliases(vols) {
		v := vols[alias]
		r, s := v.req, v.scope
		modeLine := lineOr(v.lines, "access_mode", v.line)
		if r.PerAlloc && jobType == structs.JobTypeSystem {
			p.bad(v.lines["per_alloc"], s, "per_alloc", "cannot be used in a system job: its allocations have no index to pick a volume by; name one volume with source")
		}
		if r.AttachmentMode == structs.CSIVolumeAttachmentModeBlockDevice && r.MountOptions != nil {
			p.bad(v.lines["mount_options"], s, "mount_options", `cannot be used with attachment_mode "block-device": a block device is not mounted; remove mount_options`)
		}
		one := count > 1 && !r.PerAlloc
		perAllocHint := fmt.Sprintf("; set per_alloc = true to give each allocation its own volume (%q, %q, ...)", r.Source+"[0]", r.Source+"[1]")
		switch r.AccessMode {
		case structs.CSIVolumeAccessModeSingleNodeReader:
			if !r.ReadOnly {
				p.bad(modeLine, s, "access_mode", "%q needs read_only = true", string(r.AccessMode))
			}
			if one {
				p.bad(modeLine, s, "access_mode", "%q lets one allocation read the volume, but count is %d (line %d)%s, or use \"multi-node-reader-only\"",
					string(r.AccessMode), count, countLine, perAllocHint)
			}
		case structs.CSIVolumeAccessModeSingleNodeWriter:
			if one {
				p.bad(modeLine, s, "access_mode", "%q lets one allocation use the volume, but count is %d (line %d)%s, or use a multi-node access mode",
					string(r.AccessMode), count, countLine, perAllocHint)
			}
		case structs.CSIVolumeAccessModeMultiNodeReader:
			if !r.ReadOnly {
				p.bad(modeLine, s, "access_mode", "%q needs read_only = true", string(r.AccessMode))
			}
		case structs.CSIVolumeAccessModeMultiNodeSingleWriter:
			if one && !r.ReadOnly {
				p.bad(modeLine, s, "access_mode", "%q lets one allocation write the volume, but count is %d (line %d)%s, set read_only = true, or use \"multi-node-multi-writer\"",
					string(r.AccessMode), count, countLine, perAllocHint)
			}
		}
	}
}
