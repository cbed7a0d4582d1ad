package exec

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"

	"github.com/berth-csi/berth/structs"
)

// DefaultUser is who a task runs as when its config names no user and
// berth runs as root.
const DefaultUser = structs.DefaultTaskUser

// Credential is who a task runs as: the user it named, that user's name
// on this host (the same, or the name of a numeric uid), and its uid,
// primary gid and supplementary groups.
type Credential struct {
	User   string
	Name   string
	UID    uint32
	GID    uint32
	Groups []uint32
}

// CheckPolicy refuses a user the client's policy (client { user }) does
// not allow: one outside its allowed list, in its denied list, or in one
// of its denied groups as this host resolves them (ErrUserNotAllowed). A
// nil credential (berth's own user) and root (allow_root_tasks' to allow)
// pass.
func CheckPolicy(cred *Credential, p *structs.TaskUserPolicy) error {
	if cred == nil || p == nil || cred.Root() {
		return nil
	}
	uid := strconv.FormatUint(uint64(cred.UID), 10)
	if why := p.Refusal(cred.User, cred.Name, uid); why != "" {
		return &UserNotAllowedError{User: cred.User, Why: why}
	}
	for _, g := range p.Groups() {
		grp, err := user.LookupGroup(g)
		if err != nil {
			continue // no such group here: nobody is in it
		}
		gid, err := strconv.ParseUint(grp.Gid, 10, 32)
		if err != nil {
			continue
		}
		if cred.GID == uint32(gid) || slices.Contains(cred.Groups, uint32(gid)) {
			return &UserNotAllowedError{User: cred.User,
				Why: fmt.Sprintf("it is in group %q, which the node's client { user { denied_groups } } refuses", g)}
		}
	}
	return nil
}

// UserNotAllowedError refuses a user the client's policy does not allow.
// It is ErrUserNotAllowed for errors.Is.
type UserNotAllowedError struct {
	User, Why string
}

func (e *UserNotAllowedError) Error() string {
	return fmt.Sprintf("user %q is not allowed on this client: %s", e.User, e.Why)
}

// Is makes a UserNotAllowedError ErrUserNotAllowed.
func (e *UserNotAllowedError) Is(target error) bool { return target == ErrUserNotAllowed }

// Root reports whether the credential is root's (uid 0).
func (c *Credential) Root() bool { return c != nil && c.UID == 0 }

// RootGroup reports whether the credential has root's group (gid 0) as its
// primary group or among its supplementary ones: such a user reads and
// writes what group 0 may (much of /etc, /root's files, devices), as good
// as root on most hosts.
func (c *Credential) RootGroup() bool {
	return c != nil && (c.GID == 0 || slices.Contains(c.Groups, 0))
}

// RootGroupError refuses a user that is not root but has root's group
// where root tasks are not allowed. It is ErrRootNotAllowed for errors.Is.
type RootGroupError struct {
	User string
}

func (e *RootGroupError) Error() string {
	return fmt.Sprintf("user %q has group 0 (root): tasks may not run with root's group on this client; "+
		"set client { allow_root_tasks = true } or choose another user", e.User)
}

// Is makes a RootGroupError ErrRootNotAllowed.
func (e *RootGroupError) Is(target error) bool { return target == ErrRootNotAllowed }

// ResolveUser finds who a task that names user runs as: a user name or a
// numeric uid; "" is DefaultUser. It refuses a user this host does not
// know (ErrUnknownUser), and unless allowRoot root and a user with root's
// group (ErrRootNotAllowed; a *RootGroupError for the group). When berth
// does not run as root it cannot switch users: a task runs as berth's own
// user (a nil Credential, which Start also takes), and one that names
// another user is refused (ErrNeedsRoot).
func ResolveUser(name string, allowRoot bool) (*Credential, error) {
	return resolveUser(name, allowRoot, lookupUser)
}

// resolveUser is ResolveUser with the host's user database as lookup.
func resolveUser(name string, allowRoot bool, lookup func(string) (*Credential, error)) (*Credential, error) {
	asRoot := os.Geteuid() == 0
	if name == "" {
		if !asRoot {
			return nil, nil
		}
		name = DefaultUser
	}
	cred, err := lookup(name)
	if err != nil {
		return nil, err
	}
	if err := checkRoot(cred, allowRoot); err != nil {
		return nil, err
	}
	if !asRoot {
		if int(cred.UID) == os.Geteuid() {
			return nil, nil
		}
		return nil, fmt.Errorf("running as user %q: %w", name, ErrNeedsRoot)
	}
	return cred, nil
}

// checkRoot refuses, unless allowRoot, root (uid 0) and a user with root's
// group: the init gives a task all its user's groups.
func checkRoot(cred *Credential, allowRoot bool) error {
	switch {
	case allowRoot:
		return nil
	case cred.Root():
		return fmt.Errorf("%w (user %q is uid 0)", ErrRootNotAllowed, cred.User)
	case cred.RootGroup():
		return &RootGroupError{User: cred.User}
	}
	return nil
}

// lookupUser reads the user and its groups with os/user: a name first
// looked up as a name, a number as a uid.
func lookupUser(name string) (*Credential, error) {
	var (
		u   *user.User
		err error
	)
	if _, perr := strconv.ParseUint(name, 10, 32); perr == nil {
		u, err = user.LookupId(name)
	} else {
		u, err = user.Lookup(name)
	}
	var unknownName user.UnknownUserError
	var unknownID user.UnknownUserIdError
	if errors.As(err, &unknownName) || errors.As(err, &unknownID) {
		return nil, fmt.Errorf("%w: %q", ErrUnknownUser, name)
	}
	if err != nil {
		return nil, fmt.Errorf("exec: look up user %q: %w", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("exec: user %q has a uid that is not a number: %q", name, u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("exec: user %q has a gid that is not a number: %q", name, u.Gid)
	}
	cred := &Credential{User: name, Name: u.Username, UID: uint32(uid), GID: uint32(gid)}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("exec: list the groups of user %q: %w", name, err)
	}
	for _, g := range gids {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("exec: user %q has a group ID that is not a number: %q", name, g)
		}
		cred.Groups = append(cred.Groups, uint32(n))
	}
	return cred, nil
}
