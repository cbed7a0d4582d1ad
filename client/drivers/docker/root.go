package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/berth-csi/berth/client/internal/beneath"
	"github.com/berth-csi/berth/structs"
)

// maxPasswd bounds the image's /etc/passwd read for a user's uid.
const maxPasswd = 4 << 20

// containerUser is who a created container runs as: uid -1 when the
// image does not say (a name its /etc/passwd lacks: the engine's start
// then fails, saying so), gid -1 when the user gives none; who says where
// the user came from, for a refusal.
type containerUser struct {
	uid, gid int
	who      string
}

// refuseRootEarly refuses, before anything is created, a task whose own
// user is root ("root", uid 0) where root is not allowed; the image's
// user, and any other name, are known once the container is created
// (userOf).
func (d *Driver) refuseRootEarly(ctx context.Context, cfg *TaskConfig) error {
	if cfg.User == "" || !structs.DockerUserIsRoot(cfg.User) {
		return nil
	}
	return d.refuseRoot(ctx, cfg, fmt.Sprintf("user = %q", cfg.User))
}

// refuseRoot refuses a container that runs as root, unless the client
// allows root tasks or the engine remaps root.
func (d *Driver) refuseRoot(ctx context.Context, cfg *TaskConfig, who string) error {
	if cfg.AllowRoot {
		return nil
	}
	userns, err := d.remapsRoot(ctx)
	if err != nil {
		return fmt.Errorf("task %q: %w", cfg.TaskName, err)
	}
	if userns {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrRootNotAllowed, structs.DockerRootTaskRefusal(cfg.TaskName, cfg.nodeName(), who))
}

// userOf finds who the created container runs as, from the container
// itself (the user it was created with: the task's, or its image's at
// that moment, so a tag that moved since cannot slip another past), and
// a name through the container's /etc/passwd.
func (d *Driver) userOf(ctx context.Context, cfg *TaskConfig, id string) (containerUser, error) {
	c, err := d.cli.ContainerInspect(ctx, id)
	if err != nil {
		return containerUser{}, fmt.Errorf("task %q: inspect its container: %w", cfg.TaskName, err)
	}
	user := ""
	if c.Config != nil {
		user = c.Config.User
	}
	u := containerUser{uid: -1, gid: -1, who: fmt.Sprintf("user = %q", user)}
	if cfg.User == "" {
		u.who = fmt.Sprintf("its image's user, %q", user)
		if user == "" {
			u.who = "its image names no user, so root"
		}
	}
	name, group, _ := strings.Cut(user, ":")
	if g, err := strconv.ParseUint(group, 10, 32); err == nil {
		u.gid = int(g)
	}
	switch n, err := strconv.ParseUint(name, 10, 32); {
	case name == "" || name == structs.RootUser:
		u.uid = 0
	case err == nil:
		u.uid = int(n)
	default:
		uid, gid, found, err := d.passwdUser(ctx, id, name)
		if err != nil {
			return u, fmt.Errorf("task %q: find user %q in the image's /etc/passwd: %w", cfg.TaskName, name, err)
		}
		if found {
			u.uid = uid
			u.who += fmt.Sprintf(", which is uid %d in the image", uid)
			if u.gid < 0 {
				u.gid = gid
			}
		}
	}
	return u, nil
}

// checkUser refuses a created container whose user is root where root is
// not allowed, and gives one that is not root its task dir and the
// alloc's shared dirs (see giveDirs).
func (d *Driver) checkUser(ctx context.Context, cfg *TaskConfig, id string) error {
	u, err := d.userOf(ctx, cfg, id)
	if err != nil {
		return err
	}
	if u.uid == 0 {
		return d.refuseRoot(ctx, cfg, u.who)
	}
	if u.uid > 0 {
		return giveDirs(cfg, u.uid, u.gid)
	}
	return nil
}

// giveDirs makes the task dir and its local/ the container user's, and
// the alloc's data/ and tmp/ writable by it (1777: each task writes, none
// removes another's files), reached beneath the alloc dir, following no
// link: a container that runs as another user than root writes its dirs
// as an exec task does.
func giveDirs(cfg *TaskConfig, uid, gid int) error {
	rootDir := cfg.LogRoot
	if rootDir == "" {
		rootDir = filepath.Dir(cfg.TaskDir)
	}
	root, err := beneath.Open(rootDir)
	if err != nil {
		return fmt.Errorf("task %q: give its dirs to uid %d: %w", cfg.TaskName, uid, err)
	}
	defer root.Close()
	rel := func(p string) (string, error) { return beneath.Split(rootDir, p) }
	task, err := rel(cfg.TaskDir)
	if err != nil {
		return err
	}
	for _, d := range []string{task, filepath.Join(task, "local")} {
		if err := root.Chown(d, uid, gid); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("task %q: give it its dir: %w", cfg.TaskName, err)
		}
	}
	for _, d := range sharedSubdirs {
		shared, err := rel(filepath.Join(cfg.AllocDir, d))
		if err != nil {
			return err
		}
		if err := root.Chmod(shared, 0o777|os.ModeSticky); err != nil {
			return fmt.Errorf("task %q: share the alloc's %s/ with it: %w", cfg.TaskName, d, err)
		}
	}
	return nil
}

// remapsRoot reports whether the engine remaps root, as the last
// fingerprint found, or asking the engine when none has run yet.
func (d *Driver) remapsRoot(ctx context.Context) (bool, error) {
	switch d.userns.Load() {
	case usernsOn:
		return true, nil
	case usernsOff:
		return false, nil
	}
	on, err := d.userNamespaces(ctx)
	if err != nil {
		return false, fmt.Errorf("ask the engine whether it remaps root: %w", err)
	}
	d.noteUserns(on)
	return on, nil
}

// passwdUser finds user in the container's /etc/passwd: its uid and gid,
// and whether the user is there. The file must be a regular file, read
// whole: a link (which the engine would follow in the image) or one too
// large to read is an error, not "no such user".
func (d *Driver) passwdUser(ctx context.Context, containerID, user string) (int, int, bool, error) {
	rc, _, err := d.cli.CopyFromContainer(ctx, containerID, "/etc/passwd")
	if cerrdefs.IsNotFound(err) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if errors.Is(err, io.EOF) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	if hdr.Typeflag != tar.TypeReg {
		return 0, 0, false, fmt.Errorf("the image's /etc/passwd is not a regular file (a link?); give the task a numeric user (user = \"1000\")")
	}
	if hdr.Size > maxPasswd {
		return 0, 0, false, fmt.Errorf("the image's /etc/passwd is %d bytes, over %d; give the task a numeric user", hdr.Size, maxPasswd)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		return 0, 0, false, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), maxPasswd)
	for sc.Scan() {
		// name:password:uid:gid:gecos:home:shell (passwd(5))
		f := strings.Split(sc.Text(), ":")
		if len(f) < 4 || f[0] != user {
			continue
		}
		uid, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return 0, 0, false, fmt.Errorf("user %q has uid %q, not a number", user, f[2])
		}
		gid, err := strconv.ParseUint(f[3], 10, 32)
		if err != nil {
			return 0, 0, false, fmt.Errorf("user %q has gid %q, not a number", user, f[3])
		}
		return int(uid), int(gid), true, nil
	}
	return 0, 0, false, sc.Err()
}

// What the driver knows of the engine's user namespaces.
const (
	usernsUnknown int32 = iota
	usernsOff
	usernsOn
)

// noteUserns records whether the engine remaps root.
func (d *Driver) noteUserns(on bool) {
	if on {
		d.userns.Store(usernsOn)
	} else {
		d.userns.Store(usernsOff)
	}
}

// nodeName names this node in messages.
func (c *TaskConfig) nodeName() string {
	if c.NodeName == "" {
		return "this node"
	}
	return c.NodeName
}
