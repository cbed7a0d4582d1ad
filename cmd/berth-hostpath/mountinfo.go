package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const mountInfoPath = "/proc/self/mountinfo"

// isMountPoint reports whether path is a mount point, by looking for it
// in /proc/self/mountinfo (a bind mount of a directory on the same
// filesystem has the same device as its parent, so stat cannot tell). A
// path that does not exist is not a mount point.
func isMountPoint(path string) (bool, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	f, err := os.Open(mountInfoPath)
	if err != nil {
		return false, err
	}
	defer f.Close()
	points, err := mountPoints(f)
	if err != nil {
		return false, fmt.Errorf("%s: %w", mountInfoPath, err)
	}
	return points[filepath.Clean(resolved)], nil
}

// mountPoints reads the mount point column (the fifth) of a mountinfo
// file, unescaping the octal escapes the kernel uses for space, tab,
// newline and backslash.
func mountPoints(r io.Reader) (map[string]bool, error) {
	out := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			return nil, fmt.Errorf("malformed line %q", sc.Text())
		}
		out[unescapeMountInfo(fields[4])] = true
	}
	return out, sc.Err()
}

func unescapeMountInfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
