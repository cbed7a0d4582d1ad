package volumemanager

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/structs"
)

// MountGroup is the group of an allocation's non-root tasks that write a
// volume, and when to give them the volume's root (mount_options {
// group_policy }). A plugin with VOLUME_MOUNT_GROUP is asked to take the
// group itself (volume_mount_group, on stage and publish); for any other,
// the client gives the published root to the group after the publish:
// chgrp and g+rwxs (setgid, so that what the tasks make there stays the
// group's), on the root only, never recursively, as kubelet's fsGroup does
// with fsGroupChangePolicy = OnRootMismatch. A read-only mount, and a
// block device, are left alone.
type MountGroup struct {
	GID    uint32
	Policy structs.CSIGroupPolicy
}

// groupUse is what a mount does about its group: the volume_mount_group
// to send the plugin, or whether to give the root after the publish.
type groupUse struct {
	pluginGroup string
	give        bool
}

// groupFor decides, from the node plugin's capabilities.
func (r *MountRequest) groupFor(caps *csi.NodeCapabilities) groupUse {
	g := r.Group
	if g == nil || g.Policy.Or() == structs.GroupPolicyNone || r.ReadOnly ||
		r.AttachmentMode != structs.CSIVolumeAttachmentModeFilesystem {
		return groupUse{}
	}
	if caps.SupportsMountGroup {
		return groupUse{pluginGroup: strconv.FormatUint(uint64(g.GID), 10)}
	}
	return groupUse{give: true}
}

// groupBits are g+rwx and setgid.
const groupBits = unix.S_ISGID | 0o070

// giveGroup gives the directory at path (a published target, which the
// plugin made) to g's group with g+rwxs: opened without following a link,
// changed through its descriptor. Under on-root-mismatch a root that is
// the group's with those bits already is left as it is. It reports
// whether it changed anything.
func giveGroup(path string, g *MountGroup) (bool, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	mode := st.Mode & 0o7777
	if g.Policy.Or() == structs.GroupPolicyOnRootMismatch && st.Gid == g.GID && mode&groupBits == groupBits {
		return false, nil
	}
	if st.Gid != g.GID {
		if err := unix.Fchown(fd, -1, int(g.GID)); err != nil {
			return false, fmt.Errorf("chgrp %d %s: %w", g.GID, path, err)
		}
	}
	// After the chown, which may clear setgid.
	if err := unix.Fchmod(fd, mode|groupBits); err != nil {
		return false, fmt.Errorf("chmod g+rwxs %s: %w", path, err)
	}
	return true, nil
}
