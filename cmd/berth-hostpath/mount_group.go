package main

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// parseMountGroup reads a volume_mount_group: a numeric group ID, as
// berth and kubelet send it ("" for none).
func parseMountGroup(g string) (int, error) {
	if g == "" {
		return -1, nil
	}
	gid, err := strconv.ParseUint(g, 10, 31)
	if err != nil {
		return -1, fmt.Errorf("volume_mount_group %q is not a numeric group ID", g)
	}
	return int(gid), nil
}

// giveMountGroup gives a volume's directory to group g with g+rwxs
// (VOLUME_MOUNT_GROUP): its writers of that group write there, and what
// they make stays the group's. The directory only, never recursively;
// opened without following a link, changed through its descriptor. A
// read-only use changes nothing.
func (d *driver) giveMountGroup(id, group string, readonly bool) error {
	gid, err := parseMountGroup(group)
	if err != nil || gid < 0 || readonly {
		return err
	}
	dir := d.volumeDir(id)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("volume_mount_group: open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("volume_mount_group: stat %s: %w", dir, err)
	}
	if int(st.Gid) != gid {
		if err := unix.Fchown(fd, -1, gid); err != nil {
			return fmt.Errorf("volume_mount_group: chgrp %d %s: %w", gid, dir, err)
		}
	}
	if err := unix.Fchmod(fd, st.Mode&0o7777|unix.S_ISGID|0o070); err != nil {
		return fmt.Errorf("volume_mount_group: chmod g+rwxs %s: %w", dir, err)
	}
	return nil
}
