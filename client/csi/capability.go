package csi

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/berth-csi/berth/structs"
)

// accessModes maps berth's access modes to CSI's. The alpha
// SINGLE_NODE_SINGLE_WRITER and SINGLE_NODE_MULTI_WRITER have no berth
// mode: berth does not use the SINGLE_NODE_MULTI_WRITER capability.
var accessModes = map[structs.CSIVolumeAccessMode]csipb.VolumeCapability_AccessMode_Mode{
	structs.CSIVolumeAccessModeSingleNodeReader:      csipb.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
	structs.CSIVolumeAccessModeSingleNodeWriter:      csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
	structs.CSIVolumeAccessModeMultiNodeReader:       csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
	structs.CSIVolumeAccessModeMultiNodeSingleWriter: csipb.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER,
	structs.CSIVolumeAccessModeMultiNodeMultiWriter:  csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER,
}

// volumeCapability turns a berth capability into CSI's. A file-system
// capability is a mount with mo's fs type and flags (mo may be nil); a
// block-device one is block, and mo does not apply to it.
func volumeCapability(c *structs.CSIVolumeCapability, mo *structs.CSIMountOptions) (*csipb.VolumeCapability, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: a volume capability is nil", ErrInvalidRequest)
	}
	mode, ok := accessModes[c.AccessMode]
	if !ok {
		return nil, fmt.Errorf("%w: access mode %q is not one CSI knows", ErrInvalidRequest, string(c.AccessMode))
	}
	vc := &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode}}
	switch c.AttachmentMode {
	case structs.CSIVolumeAttachmentModeFilesystem:
		m := &csipb.VolumeCapability_MountVolume{}
		if mo != nil {
			m.FsType = mo.FSType
			m.MountFlags = slices.Clone(mo.MountFlags)
		}
		vc.AccessType = &csipb.VolumeCapability_Mount{Mount: m}
	case structs.CSIVolumeAttachmentModeBlockDevice:
		vc.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
	default:
		return nil, fmt.Errorf("%w: attachment mode %q is not %q or %q", ErrInvalidRequest, string(c.AttachmentMode),
			structs.CSIVolumeAttachmentModeFilesystem, structs.CSIVolumeAttachmentModeBlockDevice)
	}
	return vc, nil
}

// volumeCapabilities converts a list, which the spec requires to be
// non-empty in every call that takes one.
func volumeCapabilities(caps []*structs.CSIVolumeCapability, mo *structs.CSIMountOptions) ([]*csipb.VolumeCapability, error) {
	if len(caps) == 0 {
		return nil, fmt.Errorf("%w: at least one volume capability is required", ErrInvalidRequest)
	}
	out := make([]*csipb.VolumeCapability, 0, len(caps))
	for _, c := range caps {
		vc, err := volumeCapability(c, mo)
		if err != nil {
			return nil, err
		}
		out = append(out, vc)
	}
	return out, nil
}

// capabilityName describes a CSI capability in berth's words, mode/type,
// for error messages. It never shows mount flags.
func capabilityName(vc *csipb.VolumeCapability) string {
	return accessModeName(vc.GetAccessMode().GetMode()) + "/" + accessTypeName(vc)
}

func accessModeName(m csipb.VolumeCapability_AccessMode_Mode) string {
	for b, c := range accessModes {
		if c == m {
			return string(b)
		}
	}
	return strings.ToLower(m.String()) // a mode berth does not use, by its CSI name
}

func accessTypeName(vc *csipb.VolumeCapability) string {
	switch {
	case vc.GetMount() != nil:
		return string(structs.CSIVolumeAttachmentModeFilesystem)
	case vc.GetBlock() != nil:
		return string(structs.CSIVolumeAttachmentModeBlockDevice)
	}
	return "none"
}

// capabilityField is one field a confirmed capability is compared on.
type capabilityField struct {
	name  string
	same  func(a, b *csipb.VolumeCapability) bool
	shown func(*csipb.VolumeCapability) string // nil when the value must not be shown
}

// capabilityFields are compared in the order a mismatch is reported.
// Mount flags are never shown: they may hold credentials.
var capabilityFields = []capabilityField{
	{"access mode", sameAccessMode, func(vc *csipb.VolumeCapability) string { return accessModeName(vc.GetAccessMode().GetMode()) }},
	{"attachment mode", func(a, b *csipb.VolumeCapability) bool { return accessTypeName(a) == accessTypeName(b) }, accessTypeName},
	{"fs type", sameFSType, func(vc *csipb.VolumeCapability) string { return fmt.Sprintf("%q", vc.GetMount().GetFsType()) }},
	{"mount flags", sameMountFlags, nil},
}

func sameAccessMode(a, b *csipb.VolumeCapability) bool {
	return a.GetAccessMode().GetMode() == b.GetAccessMode().GetMode()
}

func sameFSType(a, b *csipb.VolumeCapability) bool {
	return a.GetMount().GetFsType() == b.GetMount().GetFsType()
}

// sameMountFlags compares mount flags as sets of strings, in any order.
func sameMountFlags(a, b *csipb.VolumeCapability) bool {
	fa, fb := slices.Clone(a.GetMount().GetMountFlags()), slices.Clone(b.GetMount().GetMountFlags())
	slices.Sort(fa)
	slices.Sort(fb)
	return slices.Equal(fa, fb)
}

// compareConfirmed checks what ValidateVolumeCapabilities confirmed against
// what was asked, as the spec requires of a CO (an older plugin may
// confirm fields it does not understand). Every capability asked for must
// be confirmed with the same access mode, attachment mode, fs type and
// mount flags; the error names the first capability that is not, and the
// first field in which no confirmed capability matches it. Capabilities
// confirmed but not asked for are ignored.
func compareConfirmed(asked, confirmed []*csipb.VolumeCapability) error {
	for _, a := range asked {
		candidates := confirmed
		for _, f := range capabilityFields {
			var next []*csipb.VolumeCapability
			for _, c := range candidates {
				if f.same(a, c) {
					next = append(next, c)
				}
			}
			if len(next) == 0 {
				return fmt.Errorf("%w: capability %s: %s", ErrCapabilityMismatch, capabilityName(a), fieldDiff(f, a, candidates))
			}
			candidates = next
		}
	}
	return nil
}

// fieldDiff says how a field differs: what was asked and what was
// confirmed instead, or only that it differs when values must not be shown.
func fieldDiff(f capabilityField, asked *csipb.VolumeCapability, confirmed []*csipb.VolumeCapability) string {
	if len(confirmed) == 0 {
		return "not confirmed (the plugin confirmed no capabilities)"
	}
	if f.shown == nil {
		return f.name + " differ"
	}
	got := map[string]bool{}
	for _, c := range confirmed {
		got[f.shown(c)] = true
	}
	return fmt.Sprintf("%s %s not confirmed (confirmed: %s)", f.name, f.shown(asked),
		strings.Join(slices.Sorted(maps.Keys(got)), ", "))
}
