package exec

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// mountPoints lists the mount points of this process's mount namespace
// (from /proc/self/mountinfo), in the order the kernel lists them.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mps []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mps = append(mps, unescapeMountinfo(fields[4]))
	}
	return mps, sc.Err()
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space,
// \011, \012, \134).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// MountsUnder lists the mount points of this process's namespace strictly
// inside dir, deduplicated and sorted.
func MountsUnder(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	mps, err := mountPoints()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, mp := range mps {
		if mp != dir && under(mp, dir) && !seen[mp] {
			seen[mp] = true
			out = append(out, mp)
		}
	}
	sort.Strings(out)
	return out, nil
}

// DetachMountsUnder lazily unmounts every mount strictly inside dir except
// those in keep, deepest first: what a task mounted under a bidirectional
// volume, and the host received. It returns the mount points it detached.
func DetachMountsUnder(dir string, keep []string) ([]string, error) {
	mps, err := MountsUnder(dir)
	if err != nil {
		return nil, fmt.Errorf("exec: list mounts under %s: %w", dir, err)
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
	}
	var detached []string
	var errs []error
	for i := len(mps) - 1; i >= 0; i-- {
		mp := mps[i]
		if kept[mp] {
			continue
		}
		// A mount point may carry several stacked mounts: detach until
		// none is left.
		for range 16 {
			err := syscall.Unmount(mp, syscall.MNT_DETACH|umountNoFollow)
			if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
				break
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("exec: detach %s: %w", mp, err))
				break
			}
			detached = append(detached, mp)
		}
	}
	return detached, errors.Join(errs...)
}

// umountNoFollow is UMOUNT_NOFOLLOW, which syscall does not name.
const umountNoFollow = 0x8
