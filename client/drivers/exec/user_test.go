package exec

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// idOf is what `id -u; id -g; id -G` prints for a user of this host.
func idOf(t *testing.T, name string) string {
	t.Helper()
	u, err := user.Lookup(name)
	must.NoError(t, err)
	groups, err := u.GroupIds()
	must.NoError(t, err)
	return u.Uid + "\n" + u.Gid + "\n" + strings.Join(groups, " ") + "\n"
}

// TestStart_User: a task runs as nobody unless it names a user (by name
// or uid), with that user's gid and groups; root only where allowed; an
// unknown user is refused before anything runs.
func TestStart_User(t *testing.T) {
	needRoot(t)
	cases := []struct {
		name      string
		user      string
		allowRoot bool
		want      string // what `id -u; id -g; id -G` prints
		wantErr   error
		errText   string
	}{
		{name: "default is nobody", want: idOf(t, "nobody")},
		{name: "by name", user: "daemon", want: idOf(t, "daemon")},
		{name: "by uid", user: "1", want: idOf(t, "daemon")},
		{name: "nobody by name", user: "nobody", want: idOf(t, "nobody")},
		{name: "root allowed", user: "root", allowRoot: true, want: idOf(t, "root")},
		{name: "root refused", user: "root", wantErr: ErrRootNotAllowed,
			errText: `task "web": exec: tasks may not run as root on this client (user "root" is uid 0)`},
		{name: "uid 0 refused", user: "0", wantErr: ErrRootNotAllowed},
		{name: "unknown user", user: "no-such-user", wantErr: ErrUnknownUser, errText: `task "web": exec: no such user: "no-such-user"`},
		{name: "unknown uid", user: "4294967294", wantErr: ErrUnknownUser},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := taskConfig(t, "id -u; id -g; id -G")
			cfg.User, cfg.AllowRoot = tc.user, tc.allowRoot
			if tc.wantErr != nil {
				_, err := Start(context.Background(), cfg)
				must.ErrorIs(t, err, tc.wantErr)
				if tc.errText != "" {
					must.EqError(t, err, tc.errText)
				}
				_, statErr := os.Stat(cfg.StdoutPath)
				must.ErrorIs(t, statErr, os.ErrNotExist, must.Sprint("refused before anything ran"))
				return
			}
			must.Eq(t, ExitResult{}, waitDone(t, start(t, cfg)))
			must.Eq(t, tc.want, readFile(t, cfg.StdoutPath))
		})
	}
	must.Eq(t, "65534\n", strings.SplitAfter(idOf(t, "nobody"), "\n")[0], must.Sprint("nobody is uid 65534 on this host"))
}

// TestStart_User_WritesItsDirsAndVolumes: a task as nobody writes into its
// own (chowned) task dir and into a volume whose directory is 0777, as
// berth-hostpath makes them, and its files are nobody's; it cannot write
// where only root may, even through a read-write bind.
func TestStart_User_WritesItsDirsAndVolumes(t *testing.T) {
	needRoot(t)
	cfg := taskConfig(t, `set -e
echo mine > local/f
echo vol > /srv/vol/f
if echo x > /srv/rootonly/f 2>/dev/null; then echo rootonly-writable; else echo rootonly-refused; fi`)
	vol := filepath.Join(t.TempDir(), "vol")
	must.NoError(t, os.Mkdir(vol, 0o777))
	must.NoError(t, os.Chmod(vol, 0o777)) // whatever the umask
	rootOnly := filepath.Join(t.TempDir(), "rootonly")
	must.NoError(t, os.Mkdir(rootOnly, 0o755))
	base := filepath.Dir(cfg.TaskDir)
	cfg.Mounts = []Mount{
		{Source: vol, Destination: filepath.Join(base, "srv", "vol")},
		{Source: rootOnly, Destination: filepath.Join(base, "srv", "rootonly")},
	}
	cfg.Args[1] = strings.ReplaceAll(cfg.Args[1], "/srv/", base+"/srv/")
	must.Eq(t, ExitResult{}, waitDone(t, start(t, cfg)), must.Sprintf("stderr: %s", readFile(t, cfg.StderrPath)))
	must.Eq(t, "rootonly-refused\n", readFile(t, cfg.StdoutPath))

	nobody, err := ResolveUser("", false)
	must.NoError(t, err)
	for _, f := range []string{filepath.Join(cfg.TaskDir, "local", "f"), filepath.Join(vol, "f")} {
		fi, err := os.Stat(f)
		must.NoError(t, err)
		must.Eq(t, nobody.UID, fi.Sys().(*syscall.Stat_t).Uid, must.Sprintf("%s is the task user's", f))
	}
}

// TestStart_User_UnreachableParent: a task whose user cannot search a
// dir above its task dir still starts there and writes by relative path;
// the absolute path is closed to it.
func TestStart_User_UnreachableParent(t *testing.T) {
	needRoot(t)
	cfg := taskConfig(t, `echo mine > local/f && cat local/f; if ls "$BERTH_TASK_DIR" >/dev/null 2>&1; then echo abs-open; else echo abs-closed; fi`)
	must.NoError(t, os.Chmod(filepath.Dir(cfg.TaskDir), 0o700))
	must.Eq(t, ExitResult{}, waitDone(t, start(t, cfg)), must.Sprintf("stderr: %s", readFile(t, cfg.StderrPath)))
	must.Eq(t, "mine\nabs-closed\n", readFile(t, cfg.StdoutPath))
}

func TestResolveUser_NotRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: the refusal without root cannot be shown here")
	}
	cred, err := ResolveUser("", false)
	must.NoError(t, err)
	must.Nil(t, cred, must.Sprint("without root a task runs as berth's own user"))
	_, err = ResolveUser("nobody", false)
	must.ErrorIs(t, err, ErrNeedsRoot)
	_, err = ResolveUser("root", false)
	must.ErrorIs(t, err, ErrRootNotAllowed)
}

// TestStart_User_NoNewPrivs: a task that is not root runs with
// no_new_privs, so a setuid binary cannot make it root again; a root task
// (where allowed) keeps the usual behaviour.
func TestStart_User_NoNewPrivs(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		user      string
		allowRoot bool
		want      string
	}{
		{user: "nobody", want: "1"},
		{user: "root", allowRoot: true, want: "0"},
	} {
		t.Run(tc.user, func(t *testing.T) {
			cfg := taskConfig(t, `grep NoNewPrivs /proc/self/status | tr -d ' \t' | cut -d: -f2`)
			cfg.User, cfg.AllowRoot = tc.user, tc.allowRoot
			must.Eq(t, ExitResult{}, waitDone(t, start(t, cfg)), must.Sprintf("stderr: %s", readFile(t, cfg.StderrPath)))
			must.EqOp(t, tc.want+"\n", readFile(t, cfg.StdoutPath))
		})
	}
}

// TestResolveUser_RootGroup: a user that is not root but has root's group,
// as its primary group or a supplementary one, is refused like root
// unless root tasks are allowed; other groups (disk, docker) are the
// user's to have.
func TestResolveUser_RootGroup(t *testing.T) {
	users := map[string]*Credential{
		"root":    {User: "root", UID: 0, GID: 0, Groups: []uint32{0}},
		"sync":    {User: "sync", UID: 4, GID: 0, Groups: []uint32{0}},
		"backup":  {User: "backup", UID: 34, GID: 34, Groups: []uint32{34, 0}},
		"builder": {User: "builder", UID: 1001, GID: 1001, Groups: []uint32{1001, 6, 999}},
	}
	lookup := func(name string) (*Credential, error) {
		c, ok := users[name]
		if !ok {
			return nil, ErrUnknownUser
		}
		return c, nil
	}
	cases := []struct {
		user      string
		allowRoot bool
		wantErr   string
	}{
		{user: "root", wantErr: `exec: tasks may not run as root on this client (user "root" is uid 0)`},
		{user: "sync", wantErr: `user "sync" has group 0 (root): tasks may not run with root's group on this client; ` +
			`set client { allow_root_tasks = true } or choose another user`},
		{user: "backup", wantErr: `user "backup" has group 0 (root): tasks may not run with root's group on this client; ` +
			`set client { allow_root_tasks = true } or choose another user`},
		{user: "builder"},
		{user: "root", allowRoot: true},
		{user: "sync", allowRoot: true},
		{user: "backup", allowRoot: true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s allow_root=%t", tc.user, tc.allowRoot), func(t *testing.T) {
			cred, err := resolveUser(tc.user, tc.allowRoot, lookup)
			if tc.wantErr != "" {
				must.ErrorIs(t, err, ErrRootNotAllowed)
				must.EqError(t, err, tc.wantErr)
				must.Nil(t, cred)
				return
			}
			if os.Geteuid() != 0 {
				must.ErrorIs(t, err, ErrNeedsRoot, must.Sprint("not refused as root, but berth cannot switch users"))
				return
			}
			must.NoError(t, err)
			must.Eq(t, users[tc.user], cred)
		})
	}
}

// TestStart_User_Policy: the client's user policy refuses, before
// anything runs, a user outside its allowed list, one it denies by name
// or uid, and one of a denied group (daemon's primary group here); the
// refusal names the user and why. Root is allow_root_tasks' alone.
func TestStart_User_Policy(t *testing.T) {
	needRoot(t)
	cases := []struct {
		name   string
		user   string
		policy structs.TaskUserPolicy
		why    string
	}{
		{"not allowed", "daemon", structs.TaskUserPolicy{Allowed: []string{"nobody"}}, "is not one of the users"},
		{"denied by name", "daemon", structs.TaskUserPolicy{Denied: []string{"daemon"}}, "client { user { denied } } lists it"},
		{"denied by uid", "1", structs.TaskUserPolicy{Denied: []string{"daemon"}}, "client { user { denied } } lists it"},
		{"denied group", "daemon", structs.TaskUserPolicy{DeniedGroups: []string{"daemon"}}, `it is in group "daemon"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := taskConfig(t, "echo ran")
			cfg.User, cfg.Users = tc.user, &tc.policy
			_, err := Start(t.Context(), cfg)
			must.ErrorIs(t, err, ErrUserNotAllowed)
			must.StrContains(t, err.Error(), fmt.Sprintf("user %q is not allowed on this client: ", tc.user))
			must.StrContains(t, err.Error(), tc.why)
			_, err = os.Stat(cfg.StdoutPath)
			must.ErrorIs(t, err, os.ErrNotExist, must.Sprint("nothing ran"))
		})
	}
	t.Run("defaults let nobody run", func(t *testing.T) {
		cfg := taskConfig(t, "id -u")
		cfg.Users = &structs.TaskUserPolicy{}
		must.Eq(t, ExitResult{}, waitDone(t, start(t, cfg)))
		must.Eq(t, "65534\n", readFile(t, cfg.StdoutPath))
	})
	t.Run("root is allow_root_tasks'", func(t *testing.T) {
		cfg := taskConfig(t, "id -u")
		cfg.User, cfg.AllowRoot = "root", true
		cfg.Users = &structs.TaskUserPolicy{Allowed: []string{"nobody"}}
		must.Eq(t, ExitResult{}, waitDone(t, start(t, cfg)))
		must.Eq(t, "0\n", readFile(t, cfg.StdoutPath))
	})
}
