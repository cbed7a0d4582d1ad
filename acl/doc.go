// Package acl is berth's policy language and the compiled permission set a
// request is checked against.
//
// Parse turns a policy's rules (HCL, as an operator writes them with
// `berth acl policy apply`) into a *Policy, refusing unknown blocks,
// policies and capabilities with the line they are on. Compile merges the
// policies a token holds into an *ACL, whose Allow* methods the servers
// call at the top of every RPC endpoint. ManagementACL allows everything.
//
// The language:
//
//	namespace "default" {
//	  policy       = "read"            # deny | read | write
//	  capabilities = ["submit-job"]    # added to what policy grants
//	}
//	namespace "team-*" {               # '*' matches any run of characters
//	  policy = "write"
//	}
//	node {
//	  policy = "read"                  # deny | read | write
//	}
//	plugin {
//	  policy = "list"                  # deny | list | read | write
//	}
//	operator {
//	  policy = "write"                 # deny | read | write
//	}
//
// A namespace's policy grants capabilities as Nomad's does:
//
//	read  = read-job, csi-list-volume, csi-read-volume
//	write = read + submit-job, read-logs, csi-write-volume,
//	        csi-mount-volume, csi-register-plugin
//
// read-logs is a write capability, as in Nomad: a task's log may show
// what it was given (environment, files), which a read-only token must
// not see.
//
// A plugin's policy: list lists CSI plugins, read also reads one, write
// also runs one. A plugin ID is cluster-wide, and whoever runs a plugin
// serves every namespace's volumes under it (their secrets included), so
// a job with a csi_plugin task needs plugin write as well as
// csi-register-plugin in its namespace (kept in a namespace's write, as
// in Nomad, but not enough alone).
//
// An exact namespace rule applies before any glob; among globs
// the one with the most literal characters applies.
//
// Merging: when a token holds several policies, each rule (a namespace
// name or glob, node, plugin, operator) gets the most permissive of them,
// except that a deny (policy = "deny", or "deny" in capabilities) in any of
// them wins for that rule. Which namespace rule applies is chosen after
// merging, as above: a deny on "*" does not cover a namespace that has an
// exact rule of its own.
//
// It imports structs only (for coded errors and the "did you mean" rule,
// structs.SuggestName) and hcl/v2; the servers import it. An *ACL is
// immutable once compiled and safe for concurrent use.
package acl
