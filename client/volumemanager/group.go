package volumemanager

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
	device      bool // a block device: the tasks get a node of their own (makeTaskDevice)
}

// groupFor decides, from the node plugin's capabilities.
func (r *MountRequest) groupFor(caps *csi.NodeCapabilities) groupUse {
	g := r.Group
	if g != nil && r.AttachmentMode == structs.CSIVolumeAttachmentModeBlockDevice {
		return groupUse{device: true}
	}
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

// taskDeviceDir holds the device nodes the client makes for tasks, under
// the csi dir beside the plugins' host dirs: no plugin ID starts with a
// dot, and no plugin sees it (each sees its own host dir only), so no
// one but the client writes there.
const taskDeviceDir = ".devices"

// taskDevicePath is where the client makes its node of a block volume
// for an allocation's tasks.
func (m *Manager) taskDevicePath(allocID, pluginID, volumeID string) string {
	return filepath.Join(PluginsDir(m.dataDir), taskDeviceDir, allocID, pluginID, volumeID)
}

// makeTaskDevice makes node, the client's own block device node for a
// block volume published at target (a device node the plugin made, or
// its bind of the host's device; never followed if it is a link): the
// same device, group gid's, 0660 (0440 read only). The tasks get it in
// place of the plugin's, so that the plugin's node, and the host's /dev,
// are never changed for them; the unmount removes it. A node there
// already is made again: after a reboot its device number may be another
// device's.
func makeTaskDevice(target, node string, gid uint32, readOnly bool) error {
	var st unix.Stat_t
	if err := unix.Lstat(target, &st); err != nil {
		return fmt.Errorf("stat %s: %w", target, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return fmt.Errorf("%s, published as a block device, is not one (mode %o)", target, st.Mode)
	}
	if err := os.MkdirAll(filepath.Dir(node), 0o755); err != nil {
		return err
	}
	mode := uint32(0o660)
	if readOnly {
		mode = 0o440
	}
	if err := os.Remove(node); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := unix.Mknod(node, unix.S_IFBLK|mode, int(st.Rdev)); err != nil {
		return fmt.Errorf("make %s: %w", node, err)
	}
	if err := unix.Lchown(node, 0, int(gid)); err != nil {
		return fmt.Errorf("chgrp %d %s: %w", gid, node, err)
	}
	if err := unix.Chmod(node, mode); err != nil { // whatever the umask
		return fmt.Errorf("chmod %s: %w", node, err)
	}
	return nil
}

// removeTaskDevice removes a task device node and the dirs it leaves
// empty.
func (m *Manager) removeTaskDevice(node string) error {
	if err := os.Remove(node); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	root := filepath.Join(PluginsDir(m.dataDir), taskDeviceDir)
	for dir := filepath.Dir(node); dir != root && strings.HasPrefix(dir, root+"/"); dir = filepath.Dir(dir) {
		if err := os.Remove(dir); err != nil {
			break // not empty: another volume's node is there
		}
	}
	return nil
}
