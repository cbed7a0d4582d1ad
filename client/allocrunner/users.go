package allocrunner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/client/internal/beneath"
	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/structs"
)

// prepareUsers checks who each task runs as (taskUsers) and gives them
// their dirs (giveTaskDirs).
func (r *Runner) prepareUsers() error {
	creds, err := r.taskUsers()
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.creds = creds
	r.mu.Unlock()
	if err := giveTaskDirs(r.cfg.DataDir, r.allocDir, creds, r.logger); err != nil {
		return fmt.Errorf("alloc %s: %w", r.cfg.Alloc.ID, err)
	}
	return nil
}

// taskUsers finds who each task runs as on this node (nil: berth's own
// user), refusing, with a message for the alloc's status, a task that
// needs root where the client does not allow it and a user this node
// does not have.
func (r *Runner) taskUsers() (map[string]*exec.Credential, error) {
	node := r.cfg.NodeName
	if node == "" {
		node = r.cfg.NodeID
	}
	creds := make(map[string]*exec.Credential, len(r.tg.Tasks))
	for _, t := range r.tg.Tasks {
		if t.Driver == structs.DriverDocker {
			continue // its user is the container's, not this node's
		}
		cred, err := exec.ResolveUser(t.RunAs(), r.cfg.AllowRootTasks)
		if err == nil {
			err = exec.CheckPolicy(cred, r.cfg.Users)
		}
		var rootGroup *exec.RootGroupError
		var denied *exec.UserNotAllowedError
		switch {
		case errors.As(err, &denied):
			return nil, errors.New(structs.TaskUserRefusal(t.Name, denied.User, node, denied.Why))
		case errors.As(err, &rootGroup):
			return nil, fmt.Errorf("task %q of alloc %s on node %q: %w", t.Name, r.cfg.Alloc.ID, node, err)
		case errors.Is(err, exec.ErrRootNotAllowed):
			return nil, errors.New(structs.RootTaskRefusal(t.Name, node))
		case errors.Is(err, exec.ErrUnknownUser):
			name := t.RunAs()
			if name == "" {
				name = exec.DefaultUser
			}
			return nil, fmt.Errorf("task %q of alloc %s: user %q does not exist on node %q; create it there, or set the task's user "+
				"to one that exists (the default is %q)", t.Name, r.cfg.Alloc.ID, name, node, exec.DefaultUser)
		case err != nil:
			return nil, fmt.Errorf("task %q of alloc %s: %w", t.Name, r.cfg.Alloc.ID, err)
		}
		creds[t.Name] = cred
	}
	return creds, nil
}

// giveTaskDirs makes each task's own dirs (its task dir and local/) its
// user's, and the alloc's shared data/ and tmp/ writable by its tasks:
// the one user's when they all run as one, else 1777 (every task writes,
// none removes another's files). The logs stay berth's: it writes them.
// When a task runs as another user, the data dir and the alloc root are
// made searchable by it (see reachDataDir).
func giveTaskDirs(dataDir, allocDir string, creds map[string]*exec.Credential, logger hclog.Logger) error {
	root, err := beneath.Open(allocDir)
	if err != nil {
		return err
	}
	defer root.Close()
	var one *exec.Credential // the tasks' user, while they all have one
	mixed := false
	for task, c := range creds {
		if c == nil || c.Root() {
			continue // berth's own user, or root: the dirs are theirs
		}
		// Changed through the entries themselves, never a link a task
		// left in their place (the task owns its dir and may have).
		for _, d := range []string{task, filepath.Join(task, "local")} {
			if err := root.Chown(d, int(c.UID), int(c.GID)); err != nil {
				return fmt.Errorf("give task %q its dir: %w", task, allocDirError(allocDir, err))
			}
		}
		switch {
		case one == nil:
			one = c
		case one.UID != c.UID || one.GID != c.GID:
			mixed = true
		}
	}
	if one == nil {
		return nil
	}
	for _, d := range []string{filepath.Join(sharedDirName, "data"), filepath.Join(sharedDirName, "tmp")} {
		var err error
		if mixed {
			err = root.Chmod(d, 0o777|os.ModeSticky)
		} else {
			err = root.Chown(d, int(one.UID), int(one.GID))
		}
		if err != nil {
			return fmt.Errorf("share %s with the alloc's tasks: %w", d, allocDirError(allocDir, err))
		}
	}
	return reachDataDir(dataDir, logger)
}

// reachDataDir lets other users search, not list, the client's data dir
// (made 0700 by default) and the alloc root DATA/alloc (0711), so that a
// task running as another user reaches its alloc dir by its absolute
// path. What else the data dir holds keeps its own 0700 dirs. A dir above
// the data dir that others cannot search is only logged: the task still
// starts in its task dir (see the exec driver).
func reachDataDir(dataDir string, logger hclog.Logger) error {
	fi, err := os.Stat(dataDir)
	if err != nil {
		return err
	}
	if mode := fi.Mode().Perm(); mode&0o011 != 0o011 {
		if err := os.Chmod(dataDir, mode|0o011); err != nil {
			return fmt.Errorf("let tasks search the data dir: %w", err)
		}
		logger.Info("data dir made searchable (not readable) by other users, for tasks that run as them", "data_dir", dataDir)
	}
	if err := os.Chmod(filepath.Join(dataDir, "alloc"), 0o711); err != nil {
		return fmt.Errorf("let tasks search the alloc root: %w", err)
	}
	for d := filepath.Dir(dataDir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			logger.Warn("a dir above the data dir is not searchable by other users: tasks that run as them reach their "+
				"dirs by relative paths only", "dir", d)
			break
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return nil
}

// volumeGroup is the group the volume alias's writers run as: the
// primary group of the non-root exec tasks that mount it writable, nil
// when none does (readers, root, docker tasks: a container's user is the
// image's). A block device counts its readers too: they need its node's
// group to open it at all. Tasks of several groups get the first's, by
// task name; the others write only where the volume lets them.
func (r *Runner) volumeGroup(alias string, req *structs.VolumeRequest) *volumemanager.MountGroup {
	block := req.AttachmentMode == structs.CSIVolumeAttachmentModeBlockDevice
	if req.ReadOnly && !block {
		return nil
	}
	r.mu.Lock()
	creds := r.creds
	r.mu.Unlock()
	var gids []uint32
	var names []string
	for _, t := range r.tg.Tasks {
		cred := creds[t.Name]
		if cred == nil || cred.UID == 0 {
			continue
		}
		for _, vm := range t.VolumeMounts {
			if vm.Volume == alias && (!vm.ReadOnly || block) {
				names = append(names, t.Name)
				gids = append(gids, cred.GID)
				break
			}
		}
	}
	if len(gids) == 0 {
		return nil
	}
	first := 0
	for i := range names {
		if names[i] < names[first] {
			first = i
		}
	}
	for _, g := range gids {
		if g != gids[first] {
			r.logger.Warn("the volume's writers run in several groups; its root goes to the first task's",
				"volume", alias, "task", names[first], "gid", gids[first])
			break
		}
	}
	var policy structs.CSIGroupPolicy
	if req.MountOptions != nil {
		policy = req.MountOptions.GroupPolicy
	}
	return &volumemanager.MountGroup{GID: gids[first], Policy: policy}
}
