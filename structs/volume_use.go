package structs

import "fmt"

// SingleWriter reports whether the mode lets one writer at a time claim
// the volume (single-node-writer, multi-node-single-writer): the one
// predicate the job checks, the update rules and the scheduler use.
func (m CSIVolumeAccessMode) SingleWriter() bool { return m.MaxWriters() == 1 }

// VolumeUseProblem is one way a group's volume request cannot work with
// its count or its job's type: the request's field it is about, and why.
type VolumeUseProblem struct {
	Field   string // access_mode, per_alloc or mount_options
	Message string
}

// UseProblems checks volume request v against the count of its group's
// allocations and its job's type, as Nomad does: a volume that one
// allocation at a time may use cannot serve several unless each has its
// own (per_alloc), and the reader-only modes need read_only. A system
// job's count is not read: it runs one allocation per node, and its
// allocations have no index to pick a per_alloc volume by. countAt
// follows the count where a message names it (the job file's " (line
// 12)"; "" on the servers). The servers (Job.Validate) and the job file's
// parser both apply it, so a job sent as JSON gets the same answer.
func (v *VolumeRequest) UseProblems(count int, jobType, countAt string) []VolumeUseProblem {
	var out []VolumeUseProblem
	bad := func(field, format string, args ...any) {
		out = append(out, VolumeUseProblem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if jobType == JobTypeSystem {
		count = 1
		if v.PerAlloc {
			bad("per_alloc", "cannot be used in a system job: its allocations have no index to pick a volume by; name one volume with source")
		}
	}
	if v.AttachmentMode == CSIVolumeAttachmentModeBlockDevice && v.MountOptions != nil {
		bad("mount_options", `cannot be used with attachment_mode "block-device": a block device is not mounted; remove mount_options`)
	}
	if v.MountOptions != nil {
		if err := v.MountOptions.GroupPolicy.Validate(); err != nil {
			bad("mount_options", "%v", err)
		}
	}
	one := count > 1 && !v.PerAlloc
	perAllocHint := fmt.Sprintf("; set per_alloc = true to give each allocation its own volume (%q, %q, ...)", v.Source+"[0]", v.Source+"[1]")
	mode := string(v.AccessMode)
	switch v.AccessMode {
	case CSIVolumeAccessModeSingleNodeReader:
		if !v.ReadOnly {
			bad("access_mode", "%q needs read_only = true", mode)
		}
		if one {
			bad("access_mode", "%q lets one allocation read the volume, but count is %d%s%s, or use \"multi-node-reader-only\"",
				mode, count, countAt, perAllocHint)
		}
	case CSIVolumeAccessModeSingleNodeWriter:
		if one {
			bad("access_mode", "%q lets one allocation use the volume, but count is %d%s%s, or use a multi-node access mode",
				mode, count, countAt, perAllocHint)
		}
	case CSIVolumeAccessModeMultiNodeReader:
		if !v.ReadOnly {
			bad("access_mode", "%q needs read_only = true", mode)
		}
	case CSIVolumeAccessModeMultiNodeSingleWriter:
		if one && !v.ReadOnly {
			bad("access_mode", "%q lets one allocation write the volume, but count is %d%s%s, set read_only = true, or use \"multi-node-multi-writer\"",
				mode, count, countAt, perAllocHint)
		}
	}
	return out
}
