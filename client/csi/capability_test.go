package csi

import (
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/shoenig/test/must"
	"google.golang.org/protobuf/proto"

	"github.com/berth-csi/berth/structs"
)

func mountCap(mode csipb.VolumeCapability_AccessMode_Mode, fsType string, flags ...string) *csipb.VolumeCapability {
	return &csipb.VolumeCapability{
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode},
		AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: fsType, MountFlags: flags}},
	}
}

func blockCap(mode csipb.VolumeCapability_AccessMode_Mode) *csipb.VolumeCapability {
	return &csipb.VolumeCapability{
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode},
		AccessType: &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}},
	}
}

const (
	snw = csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	mnr = csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
)

func TestVolumeCapability_Conversion(t *testing.T) {
	fs := structs.CSIVolumeAttachmentModeFilesystem
	mo := &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"noatime"}}
	cases := []struct {
		name string
		in   *structs.CSIVolumeCapability
		want *csipb.VolumeCapability
	}{
		{"single-node-reader-only", &structs.CSIVolumeCapability{AccessMode: structs.CSIVolumeAccessModeSingleNodeReader, AttachmentMode: fs},
			mountCap(csipb.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY, "ext4", "noatime")},
		{"single-node-writer", &structs.CSIVolumeCapability{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: fs},
			mountCap(snw, "ext4", "noatime")},
		{"multi-node-reader-only", &structs.CSIVolumeCapability{AccessMode: structs.CSIVolumeAccessModeMultiNodeReader, AttachmentMode: fs},
			mountCap(mnr, "ext4", "noatime")},
		{"multi-node-single-writer", &structs.CSIVolumeCapability{AccessMode: structs.CSIVolumeAccessModeMultiNodeSingleWriter, AttachmentMode: fs},
			mountCap(csipb.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER, "ext4", "noatime")},
		{"multi-node-multi-writer", &structs.CSIVolumeCapability{AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter, AttachmentMode: fs},
			mountCap(csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, "ext4", "noatime")},
		{"block ignores mount options", &structs.CSIVolumeCapability{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter,
			AttachmentMode: structs.CSIVolumeAttachmentModeBlockDevice}, blockCap(snw)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := volumeCapability(tc.in, mo)
			must.NoError(t, err)
			must.True(t, proto.Equal(tc.want, got), must.Sprintf("got %v", got))
		})
	}

	got, err := volumeCapability(&structs.CSIVolumeCapability{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: fs}, nil)
	must.NoError(t, err)
	must.True(t, proto.Equal(mountCap(snw, ""), got), must.Sprint("no mount options: an empty mount"))

	for _, bad := range []*structs.CSIVolumeCapability{
		nil,
		{AccessMode: "everyone", AttachmentMode: fs},
		{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: "floppy"},
	} {
		_, err := volumeCapability(bad, nil)
		must.ErrorIs(t, err, ErrInvalidRequest)
		must.True(t, IsFinal(err))
	}
	_, err = volumeCapabilities(nil, nil)
	must.ErrorIs(t, err, ErrInvalidRequest)
}

func TestCompareConfirmed(t *testing.T) {
	cases := []struct {
		name      string
		asked     []*csipb.VolumeCapability
		confirmed []*csipb.VolumeCapability
		want      string // "" = match
	}{
		{"same", []*csipb.VolumeCapability{mountCap(snw, "ext4", "ro")}, []*csipb.VolumeCapability{mountCap(snw, "ext4", "ro")}, ""},
		{"flags in another order", []*csipb.VolumeCapability{mountCap(snw, "", "ro", "noexec")},
			[]*csipb.VolumeCapability{mountCap(snw, "", "noexec", "ro")}, ""},
		{"another order, extra confirmed", []*csipb.VolumeCapability{mountCap(snw, ""), blockCap(mnr)},
			[]*csipb.VolumeCapability{blockCap(mnr), mountCap(mnr, ""), mountCap(snw, "")}, ""},
		{"none confirmed", []*csipb.VolumeCapability{mountCap(snw, "")}, nil,
			"capability single-node-writer/file-system: not confirmed (the plugin confirmed no capabilities)"},
		{"access mode", []*csipb.VolumeCapability{mountCap(snw, "")}, []*csipb.VolumeCapability{mountCap(mnr, "")},
			"capability single-node-writer/file-system: access mode single-node-writer not confirmed (confirmed: multi-node-reader-only)"},
		{"unknown to berth", []*csipb.VolumeCapability{mountCap(snw, "")},
			[]*csipb.VolumeCapability{mountCap(csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, "")},
			"access mode single-node-writer not confirmed (confirmed: single_node_single_writer)"},
		{"block vs mount", []*csipb.VolumeCapability{blockCap(snw)}, []*csipb.VolumeCapability{mountCap(snw, "")},
			"capability single-node-writer/block-device: attachment mode block-device not confirmed (confirmed: file-system)"},
		{"fs type", []*csipb.VolumeCapability{mountCap(snw, "xfs")}, []*csipb.VolumeCapability{mountCap(snw, "ext4"), mountCap(mnr, "xfs")},
			`fs type "xfs" not confirmed (confirmed: "ext4")`},
		{"mount flags", []*csipb.VolumeCapability{mountCap(snw, "", "password=hunter2")}, []*csipb.VolumeCapability{mountCap(snw, "", "password=other")},
			"capability single-node-writer/file-system: mount flags differ"},
		{"second capability", []*csipb.VolumeCapability{mountCap(snw, ""), mountCap(mnr, "")}, []*csipb.VolumeCapability{mountCap(snw, "")},
			"capability multi-node-reader-only/file-system: access mode multi-node-reader-only not confirmed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := compareConfirmed(tc.asked, tc.confirmed)
			if tc.want == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, ErrCapabilityMismatch)
			must.StrContains(t, err.Error(), tc.want)
			must.StrNotContains(t, err.Error(), "password=")
			must.True(t, IsFinal(err))
		})
	}
}
