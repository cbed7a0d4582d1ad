package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/berth-csi/berth/structs"
)

// rootGate is what Start still has to check of a container's user once
// the container is created: a user by a name other than root is root only
// if the image's /etc/passwd says uid 0.
type rootGate struct {
	task, node string
	user       string // a name to look up, "" when nothing is left to check
	who        string // where the user came from, for the refusal
}

// rootCheck refuses, before anything is created, a container that would
// run as root by its user or its image's ("", "root", uid 0) where root
// is not allowed: the client does not allow root tasks and the engine
// does not remap root. A user given by another name is looked up in the
// image once the container is created (rootGate.named).
func (d *Driver) rootCheck(ctx context.Context, cfg *TaskConfig, imageUser string) (rootGate, error) {
	g := rootGate{task: cfg.TaskName, node: cfg.nodeName()}
	if cfg.AllowRoot {
		return g, nil
	}
	userns, err := d.remapsRoot(ctx)
	if err != nil {
		return g, fmt.Errorf("task %q: %w", cfg.TaskName, err)
	}
	if userns {
		return g, nil
	}
	user, who := cfg.User, fmt.Sprintf("user = %q", cfg.User)
	if user == "" {
		user, who = imageUser, fmt.Sprintf("its image's user, %q", imageUser)
		if imageUser == "" {
			who = "its image names no user, so root"
		}
	}
	if structs.DockerUserIsRoot(user) {
		return g, fmt.Errorf("%w: %s", ErrRootNotAllowed, structs.DockerRootTaskRefusal(cfg.TaskName, g.node, who))
	}
	if name, _, _ := strings.Cut(user, ":"); !isNumber(name) {
		g.user, g.who = name, who
	}
	return g, nil
}

// named looks the gate's user up in the created container's /etc/passwd
// and refuses it when its uid is 0. A user the image does not have is
// left to the engine, whose start then fails saying so.
func (g rootGate) named(ctx context.Context, d *Driver, containerID string) error {
	if g.user == "" {
		return nil
	}
	uid, found, err := d.passwdUID(ctx, containerID, g.user)
	if err != nil {
		return fmt.Errorf("task %q: read the image's /etc/passwd to find user %q: %w", g.task, g.user, err)
	}
	if found && uid == 0 {
		return fmt.Errorf("%w: %s", ErrRootNotAllowed,
			structs.DockerRootTaskRefusal(g.task, g.node, fmt.Sprintf("%s, which is uid 0 in the image", g.who)))
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

// passwdUID finds user in the container's /etc/passwd: its uid, and
// whether the file and the user are there.
func (d *Driver) passwdUID(ctx context.Context, containerID, user string) (uint64, bool, error) {
	rc, _, err := d.cli.CopyFromContainer(ctx, containerID, "/etc/passwd")
	if cerrdefs.IsNotFound(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, false, nil
		}
		return 0, false, err
	}
	sc := bufio.NewScanner(io.LimitReader(tr, 4<<20))
	for sc.Scan() {
		// name:password:uid:gid:gecos:home:shell (passwd(5))
		f := strings.Split(sc.Text(), ":")
		if len(f) < 3 || f[0] != user {
			continue
		}
		uid, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return 0, false, fmt.Errorf("user %q has uid %q, not a number", user, f[2])
		}
		return uid, true, nil
	}
	return 0, false, sc.Err()
}

func isNumber(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
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
