package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// hashSecret is what the servers keep of a secret (an ACL token's or a
// node's): its SHA-256, in hex.
func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// secretMatches reports whether secret hashes to hash, in constant time;
// an empty secret or hash never matches.
func secretMatches(secret, hash string) bool {
	if secret == "" || hash == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hashSecret(secret)), []byte(hash)) == 1
}

// resolveToken finds what the caller of secret may do. ACLs off, every
// caller is management. An empty or unknown secret is anonymous: the
// policy named "anonymous" if it exists, else nothing. An expired token is
// refused. token is nil for anonymous callers and with ACLs off.
func (s *Server) resolveToken(secret string) (*acl.ACL, *structs.ACLToken, error) {
	if !s.config.ACLEnabled {
		return acl.ManagementACL, nil, nil
	}
	st := s.State()
	var token *structs.ACLToken
	if secret != "" {
		var err error
		if token, err = st.ACLTokenBySecretHash(nil, hashSecret(secret)); err != nil {
			return nil, nil, err
		}
	}
	if token == nil {
		a, err := s.acls.compile(s, st, []string{structs.AnonymousPolicyName})
		return a, nil, err
	}
	if token.Expired(time.Now()) {
		return nil, nil, structs.NewError(structs.CodePermissionDenied,
			"ACL token expired; ask an operator for a new one (`berth acl token create`)")
	}
	if token.Type == structs.ACLTokenTypeManagement {
		return acl.ManagementACL, token, nil
	}
	a, err := s.acls.compile(s, st, token.Policies)
	return a, token, err
}

// aclCache keeps the ACLs compiled from sets of policies, keyed by the
// policies' names and ModifyIndex: a rewritten policy has a new key, so an
// entry is never stale, only unused. It is emptied when it grows past
// maxACLCache.
type aclCache struct {
	mu      sync.Mutex
	entries map[string]*acl.ACL
}

const maxACLCache = 512

// compile returns the ACL of the named policies as st holds them; a name
// with no policy grants nothing.
func (c *aclCache) compile(s *Server, st *state.StateStore, names []string) (*acl.ACL, error) {
	var (
		policies []*structs.ACLPolicy
		key      strings.Builder
	)
	names = slices.Clone(names)
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		p, err := st.ACLPolicyByName(nil, name)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		policies = append(policies, p)
		key.WriteString(strconv.Quote(p.Name) + "@" + strconv.FormatUint(p.ModifyIndex, 10) + ",")
	}
	if len(policies) == 0 {
		return acl.DenyAll, nil
	}
	c.mu.Lock()
	a, ok := c.entries[key.String()]
	c.mu.Unlock()
	if ok {
		return a, nil
	}
	parsed := make([]*acl.Policy, 0, len(policies))
	for _, p := range policies {
		pol, err := acl.Parse(p.Rules)
		if err != nil {
			// Rules are parsed before they are stored; a policy this
			// version cannot read grants nothing.
			s.logger.Warn("acl policy cannot be parsed; it grants nothing", "policy", p.Name, "error", err)
			continue
		}
		parsed = append(parsed, pol)
	}
	a = acl.Compile(parsed...)
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= maxACLCache {
		c.entries = map[string]*acl.ACL{}
	}
	c.entries[key.String()] = a
	c.mu.Unlock()
	return a, nil
}

// isManagementToken reports whether secret is a management token (always,
// with ACLs off).
func (s *Server) isManagementToken(secret string) bool {
	a, _, err := s.resolveToken(secret)
	return err == nil && a.IsManagement()
}
