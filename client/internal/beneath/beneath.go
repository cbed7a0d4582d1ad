package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Errors, for errors.Is; each comes inside an *fs.PathError that names the
// full path (and, for a link above its last entry, the link), so their
// own words are short.
var (
	// ErrLink: an entry of the path is a symbolic link, which is not
	// followed.
	ErrLink = errors.New("a symbolic link is there, and berth never follows a link under an alloc dir")
	// ErrNotDir: an entry that must be a directory is not one.
	ErrNotDir = errors.New("not a directory")
	// ErrNotRegular: a file to open is not a regular file (a directory,
	// a device, a FIFO or a socket).
	ErrNotRegular = errors.New("not a regular file")
	// ErrEscape: the path leaves its root ("..", or an absolute path).
	ErrEscape = errors.New("the path leaves the directory it must stay beneath")
	// ErrUnsupported: the kernel has no openat2.
	ErrUnsupported = errors.New("openat2(2) is not available: the client needs Linux 5.6 or later, and no seccomp filter that refuses the call")
)

// maxRetries bounds the lookups tried again after a rename raced one
// (EAGAIN) or a signal broke it (EINTR).
const maxRetries = 100

// resolveFlags keep every lookup beneath the root and off links.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// Root is an open directory that paths are resolved beneath.
type Root struct {
	dir string
	f   *os.File // O_PATH
}

// Open opens dir as a root. dir itself must not be a link.
func Open(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		err = mapErrno(err)
		if fi, lerr := os.Lstat(dir); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			err = ErrLink // O_DIRECTORY on a link says ENOTDIR
		}
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return &Root{dir: dir, f: os.NewFile(uintptr(fd), dir)}, nil
}

// Close releases the root's fd.
func (r *Root) Close() error { return r.f.Close() }

// Name is the root's path.
func (r *Root) Name() string { return r.dir }

// path is rel under the root, for errors.
func (r *Root) path(rel string) string { return filepath.Join(r.dir, rel) }

// clean checks rel is a local path and cleans it; "" and "." are the root.
func clean(rel string) (string, error) {
	if rel == "" {
		return ".", nil
	}
	if !filepath.IsLocal(rel) && filepath.Clean(rel) != "." {
		return "", ErrEscape
	}
	return filepath.Clean(rel), nil
}

// openat2 opens rel beneath the root; flags get O_NOFOLLOW and O_CLOEXEC.
func (r *Root) openat2(rel string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: resolveFlags}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(int(r.f.Fd()), rel, &how)
		if (errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN)) && try < maxRetries {
			continue // EAGAIN: a rename raced the lookup
		}
		return fd, err
	}
}

// fail wraps err as the error of op on rel, naming the link that stopped
// it when it is one.
func (r *Root) fail(op, rel string, err error) error {
	err = mapErrno(err)
	if errors.Is(err, ErrLink) || errors.Is(err, ErrNotDir) {
		// O_DIRECTORY on a link says ENOTDIR: which one it is, is told
		// by looking.
		switch link := r.firstLink(rel); {
		case link == rel:
			err = ErrLink
		case link != "":
			err = fmt.Errorf("%w (%s is a link)", ErrLink, r.path(link))
		}
	}
	return &fs.PathError{Op: op, Path: r.path(rel), Err: err}
}

// mapErrno turns the kernel's answers into this package's errors.
func mapErrno(err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return ErrLink
	case errors.Is(err, unix.EXDEV):
		return ErrEscape
	case errors.Is(err, unix.ENOTDIR):
		return ErrNotDir
	case errors.Is(err, unix.ENOSYS):
		return ErrUnsupported
	case errors.Is(err, unix.EPERM) && !openat2Works():
		// A seccomp filter older than openat2 (a container's runtime)
		// refuses the call it does not know. Any other EPERM (an
		// immutable file, say) is the kernel's answer, passed on.
		return ErrUnsupported
	}
	return err
}

// openat2Works reports, once, whether openat2 answers at all here: a
// seccomp filter that does not know it answers EPERM to every call.
var openat2Works = sync.OnceValue(func() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH})
	if err != nil {
		return false
	}
	_ = unix.Close(fd)
	return true
})

// firstLink names, for an error message only, the first entry of rel that
// is a link ("" if none is now).
func (r *Root) firstLink(rel string) string {
	parts := strings.Split(rel, string(filepath.Separator))
	for i := range parts {
		prefix := filepath.Join(parts[:i+1]...)
		fd, err := r.openat2(prefix, unix.O_PATH, 0)
		if err != nil {
			return ""
		}
		var st unix.Stat_t
		serr := unix.Fstat(fd, &st)
		unix.Close(fd)
		if serr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return prefix
		}
	}
	return ""
}

// openPath opens rel as an O_PATH fd that is not a link (a trailing link
// is opened as itself, then refused), with its stat.
func (r *Root) openPath(op, rel string) (int, *unix.Stat_t, error) {
	rel, err := clean(rel)
	if err != nil {
		return -1, nil, &fs.PathError{Op: op, Path: r.path(rel), Err: err}
	}
	fd, err := r.openat2(rel, unix.O_PATH, 0)
	if err != nil {
		return -1, nil, r.fail(op, rel, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, nil, &fs.PathError{Op: op, Path: r.path(rel), Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return -1, nil, &fs.PathError{Op: op, Path: r.path(rel), Err: ErrLink}
	}
	return fd, &st, nil
}

// procPath is the magic link to an fd of this process: opening it opens
// exactly the file the fd holds (how an O_PATH fd is reopened or chmodded).
func procPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// OpenFile opens the regular file rel with flag (os.O_RDONLY,
// os.O_WRONLY|os.O_APPEND, ...), creating it with perm when flag has
// os.O_CREATE. A link, or anything but a regular file, is refused before
// it is opened: opening a device or a FIFO a task planted could block or
// act on the device.
func (r *Root) OpenFile(rel string, flag int, perm os.FileMode) (*os.File, error) {
	rel, err := clean(rel)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: r.path(rel), Err: err}
	}
	if flag&os.O_CREATE != 0 {
		fd, err := r.openat2(rel, flag|unix.O_EXCL, uint32(perm.Perm()))
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), r.path(rel)), nil
		case !errors.Is(err, unix.EEXIST):
			return nil, r.fail("open", rel, err)
		}
		// It exists: opened as any existing file is.
	}
	pfd, st, err := r.openPath("open", rel)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &fs.PathError{Op: "open", Path: r.path(rel), Err: ErrNotRegular}
	}
	// Reopened through the O_PATH fd's magic link: exactly the file that
	// was checked, whatever has been renamed since.
	fd, err := unix.Open(procPath(pfd), (flag&^(os.O_CREATE|os.O_EXCL))|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: r.path(rel), Err: err}
	}
	return os.NewFile(uintptr(fd), r.path(rel)), nil
}

// OpenPath opens rel as an O_PATH fd (no read or write: a mount point, or
// an fd to name by its magic link, MagicPath); a link is ErrLink.
func (r *Root) OpenPath(rel string) (*os.File, error) {
	fd, _, err := r.openPath("open", rel)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), r.path(rel)), nil
}

// MagicPath is the /proc/self/fd link of an open file: a syscall that
// takes a path (mount(2)) and is given it acts on exactly that file,
// whatever its path has become.
func MagicPath(f *os.File) string { return procPath(int(f.Fd())) }

// Stat is what rel is, without following it; a link is ErrLink.
func (r *Root) Stat(rel string) (fs.FileInfo, error) {
	fd, _, err := r.openPath("stat", rel)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), r.path(rel))
	defer f.Close()
	return f.Stat()
}

// MkdirAll makes the directory rel and those above it that are missing,
// with perm (less the umask). An entry that is a link is ErrLink and one
// that is not a directory ErrNotDir: neither is followed or replaced.
func (r *Root) MkdirAll(rel string, perm os.FileMode) error {
	rel, err := clean(rel)
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: r.path(rel), Err: err}
	}
	if rel == "." {
		return nil
	}
	parts := strings.Split(rel, string(filepath.Separator))
	for i := range parts {
		cur := filepath.Join(parts[:i+1]...)
		for attempt := 0; ; attempt++ {
			fd, err := r.openat2(cur, unix.O_PATH|unix.O_DIRECTORY, 0)
			if err == nil {
				unix.Close(fd)
				break
			}
			if !errors.Is(err, unix.ENOENT) || attempt > 0 {
				return r.fail("mkdir", cur, err)
			}
			parent := filepath.Dir(cur)
			pfd, err := r.openat2(parent, unix.O_PATH|unix.O_DIRECTORY, 0)
			if err != nil {
				return r.fail("mkdir", parent, err)
			}
			err = unix.Mkdirat(pfd, parts[i], uint32(perm.Perm()))
			unix.Close(pfd)
			if err != nil && !errors.Is(err, unix.EEXIST) {
				return &fs.PathError{Op: "mkdir", Path: r.path(cur), Err: err}
			}
			// Opened again: what is there now must be a directory.
		}
	}
	return nil
}

// Dir checks that rel is a directory (not a link to one).
func (r *Root) Dir(rel string) error {
	fd, st, err := r.openPath("open", rel)
	if err != nil {
		return err
	}
	unix.Close(fd)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return &fs.PathError{Op: "open", Path: r.path(rel), Err: ErrNotDir}
	}
	return nil
}

// openDir opens rel as an O_PATH fd of a directory: a link is ErrLink,
// anything else ErrNotDir (a file a task hard-linked there from the host
// has the host file's inode, which must never be changed).
func (r *Root) openDir(op, rel string) (int, error) {
	fd, st, err := r.openPath(op, rel)
	if err != nil {
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return -1, &fs.PathError{Op: op, Path: r.path(rel), Err: ErrNotDir}
	}
	return fd, nil
}

// Chown changes the owner of the directory rel itself (never what a link
// points to, nor a file).
func (r *Root) Chown(rel string, uid, gid int) error {
	fd, err := r.openDir("chown", rel)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH); err != nil {
		return &fs.PathError{Op: "chown", Path: r.path(rel), Err: err}
	}
	return nil
}

// Chmod changes the mode of the directory rel itself (never what a link
// points to, nor a file).
func (r *Root) Chmod(rel string, mode os.FileMode) error {
	fd, err := r.openDir("chmod", rel)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// The fd is no link (openPath refused one): its magic link reaches the
	// file itself.
	if err := os.Chmod(procPath(fd), mode); err != nil {
		return &fs.PathError{Op: "chmod", Path: r.path(rel), Err: errors.Unwrap(err)}
	}
	return nil
}

// SetModTime sets the modification time of an open file (its access time
// is left as it is), through its fd: no path is looked up.
func SetModTime(f *os.File, mtime time.Time) error {
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(mtime.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, procPath(int(f.Fd())), ts, 0); err != nil {
		return &fs.PathError{Op: "chtimes", Path: f.Name(), Err: err}
	}
	return nil
}

// Split cuts path into a root and a path under it, for callers that hold
// a full path and know the directory it must stay beneath: root must be
// an absolute, clean prefix of path.
func Split(root, path string) (string, error) {
	rel, err := filepath.Rel(root, path)
	if err != nil || !filepath.IsLocal(rel) {
		return "", &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (not under %s)", ErrEscape, root)}
	}
	return rel, nil
}

// OpenAppend opens path for appending, creating it (mode 0644) and the
// dirs above it beneath root, which must exist; "" is path's own dir. No
// link below root is followed: a log a task replaced with a link to a host
// file is refused (ErrLink), not written.
func OpenAppend(root, path string) (*os.File, error) {
	if root == "" {
		root = filepath.Dir(path)
	}
	rel, err := Split(root, path)
	if err != nil {
		return nil, err
	}
	r, err := Open(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := r.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return nil, err
	}
	return r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
}
