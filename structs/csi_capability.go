package structs

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// CSIVolumeAccessMode is how many nodes may use a volume, and how.
type CSIVolumeAccessMode string

const (
	CSIVolumeAccessModeUnknown               CSIVolumeAccessMode = ""
	CSIVolumeAccessModeSingleNodeReader      CSIVolumeAccessMode = "single-node-reader-only"
	CSIVolumeAccessModeSingleNodeWriter      CSIVolumeAccessMode = "single-node-writer"
	CSIVolumeAccessModeMultiNodeReader       CSIVolumeAccessMode = "multi-node-reader-only"
	CSIVolumeAccessModeMultiNodeSingleWriter CSIVolumeAccessMode = "multi-node-single-writer"
	CSIVolumeAccessModeMultiNodeMultiWriter  CSIVolumeAccessMode = "multi-node-multi-writer"
)

// AccessModes lists every valid access mode, in the order people read them.
var AccessModes = []CSIVolumeAccessMode{
	CSIVolumeAccessModeSingleNodeReader,
	CSIVolumeAccessModeSingleNodeWriter,
	CSIVolumeAccessModeMultiNodeReader,
	CSIVolumeAccessModeMultiNodeSingleWriter,
	CSIVolumeAccessModeMultiNodeMultiWriter,
}

// Valid reports whether m is a known mode (not unknown).
func (m CSIVolumeAccessMode) Valid() bool {
	for _, v := range AccessModes {
		if m == v {
			return true
		}
	}
	return false
}

// SingleNode reports whether the mode limits the volume to one node.
func (m CSIVolumeAccessMode) SingleNode() bool {
	return m == CSIVolumeAccessModeSingleNodeReader || m == CSIVolumeAccessModeSingleNodeWriter
}

// AllowsWrite reports whether any writer may claim under this mode.
func (m CSIVolumeAccessMode) AllowsWrite() bool {
	return m == CSIVolumeAccessModeSingleNodeWriter ||
		m == CSIVolumeAccessModeMultiNodeSingleWriter ||
		m == CSIVolumeAccessModeMultiNodeMultiWriter
}

// MaxWriters is how many write claims the mode allows; -1 is unlimited.
func (m CSIVolumeAccessMode) MaxWriters() int {
	switch m {
	case CSIVolumeAccessModeSingleNodeWriter, CSIVolumeAccessModeMultiNodeSingleWriter:
		return 1
	case CSIVolumeAccessModeMultiNodeMultiWriter:
		return -1
	}
	return 0
}

func (m CSIVolumeAccessMode) String() string {
	if m == CSIVolumeAccessModeUnknown {
		return "unknown"
	}
	return string(m)
}

// GoString is used by %#v.
func (m CSIVolumeAccessMode) GoString() string {
	return fmt.Sprintf("CSIVolumeAccessMode(%q)", string(m))
}

// CSIVolumeAttachmentMode is how a volume reaches a task.
type CSIVolumeAttachmentMode string

const (
	CSIVolumeAttachmentModeUnknown     CSIVolumeAttachmentMode = ""
	CSIVolumeAttachmentModeBlockDevice CSIVolumeAttachmentMode = "block-device"
	CSIVolumeAttachmentModeFilesystem  CSIVolumeAttachmentMode = "file-system"
)

// Valid reports whether m is a known mode (not unknown).
func (m CSIVolumeAttachmentMode) Valid() bool {
	return m == CSIVolumeAttachmentModeBlockDevice || m == CSIVolumeAttachmentModeFilesystem
}

func (m CSIVolumeAttachmentMode) String() string {
	if m == CSIVolumeAttachmentModeUnknown {
		return "unknown"
	}
	return string(m)
}

// GoString is used by %#v.
func (m CSIVolumeAttachmentMode) GoString() string {
	return fmt.Sprintf("CSIVolumeAttachmentMode(%q)", string(m))
}

// CSIVolumeCapability is one access and attachment mode pair a volume is
// requested with.
type CSIVolumeCapability struct {
	AccessMode     CSIVolumeAccessMode
	AttachmentMode CSIVolumeAttachmentMode
}

func (c *CSIVolumeCapability) String() string {
	return c.AccessMode.String() + "/" + c.AttachmentMode.String()
}

// Validate names the bad field.
func (c *CSIVolumeCapability) Validate() error {
	if !c.AccessMode.Valid() {
		return fmt.Errorf("access_mode %q is not one of %s", string(c.AccessMode), joinModes())
	}
	if !c.AttachmentMode.Valid() {
		return fmt.Errorf("attachment_mode %q is not one of %q, %q", string(c.AttachmentMode),
			CSIVolumeAttachmentModeFilesystem, CSIVolumeAttachmentModeBlockDevice)
	}
	return nil
}

func joinModes() string {
	s := make([]string, len(AccessModes))
	for i, m := range AccessModes {
		s[i] = fmt.Sprintf("%q", string(m))
	}
	return strings.Join(s, ", ")
}

// Redacted is what replaces a secret or a mount flag wherever people or
// logs could see it.
const Redacted = "[REDACTED]"

// CSIMountOptions are the fs type and mount flags a volume is mounted with,
// and how the client gives the mounted volume's root to its tasks' group
// (GroupPolicy). Mount flags may hold credentials: they are redacted in
// String, GoString and JSON. The msgpack form (raft, RPC) keeps them.
type CSIMountOptions struct {
	FSType      string
	MountFlags  []string
	GroupPolicy CSIGroupPolicy `json:",omitempty"`
}

// CSIGroupPolicy says when the client gives a published volume's root
// directory to the group of the non-root tasks that write it (chgrp and
// g+rwxs, never recursive), when the node plugin cannot take the group
// itself (VOLUME_MOUNT_GROUP), as kubelet's fsGroupChangePolicy does.
type CSIGroupPolicy string

const (
	// GroupPolicyOnRootMismatch (the default) changes the root only when
	// its group or group bits are not already the tasks'.
	GroupPolicyOnRootMismatch CSIGroupPolicy = "on-root-mismatch"
	// GroupPolicyAlways changes it on every publish.
	GroupPolicyAlways CSIGroupPolicy = "always"
	// GroupPolicyNone never changes it, nor asks the plugin to.
	GroupPolicyNone CSIGroupPolicy = "none"
)

// GroupPolicies lists the policies, the default first.
var GroupPolicies = []CSIGroupPolicy{GroupPolicyOnRootMismatch, GroupPolicyAlways, GroupPolicyNone}

// Or is p, or the default when p is unset.
func (p CSIGroupPolicy) Or() CSIGroupPolicy {
	if p == "" {
		return GroupPolicyOnRootMismatch
	}
	return p
}

// Validate refuses a policy berth does not know.
func (p CSIGroupPolicy) Validate() error {
	if p == "" || slices.Contains(GroupPolicies, p) {
		return nil
	}
	return fmt.Errorf("group_policy %q is not one of %q, %q or %q", string(p), GroupPolicyOnRootMismatch, GroupPolicyAlways, GroupPolicyNone)
}

// Copy returns a deep copy.
func (o *CSIMountOptions) Copy() *CSIMountOptions {
	if o == nil {
		return nil
	}
	c := *o
	if o.MountFlags != nil {
		c.MountFlags = append([]string(nil), o.MountFlags...)
	}
	return &c
}

// Redacted returns a copy with every mount flag replaced.
func (o *CSIMountOptions) Redacted() *CSIMountOptions {
	if o == nil {
		return nil
	}
	c := &CSIMountOptions{FSType: o.FSType, GroupPolicy: o.GroupPolicy}
	if len(o.MountFlags) > 0 {
		c.MountFlags = []string{Redacted}
	}
	return c
}

func (o *CSIMountOptions) String() string {
	if o == nil {
		return "<nil>"
	}
	r := o.Redacted()
	if r.GroupPolicy != "" {
		return fmt.Sprintf("fs_type=%s mount_flags=%v group_policy=%s", r.FSType, r.MountFlags, r.GroupPolicy)
	}
	return fmt.Sprintf("fs_type=%s mount_flags=%v", r.FSType, r.MountFlags)
}

// GoString is used by %#v.
func (o *CSIMountOptions) GoString() string { return "&CSIMountOptions{" + o.String() + "}" }

// MarshalJSON redacts the mount flags.
func (o *CSIMountOptions) MarshalJSON() ([]byte, error) {
	type plain CSIMountOptions
	return json.Marshal((*plain)(o.Redacted()))
}

// CSISecrets are passed to the plugin with each call. They are never shown:
// String, GoString and JSON redact every value; only msgpack (raft, RPC)
// carries them.
type CSISecrets map[string]string

func (s CSISecrets) String() string {
	if len(s) == 0 {
		return "map[]"
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k+":"+Redacted)
	}
	sortStrings(keys)
	return "map[" + strings.Join(keys, " ") + "]"
}

// GoString is used by %#v.
func (s CSISecrets) GoString() string { return "CSISecrets" + s.String() }

// MarshalJSON redacts every value.
func (s CSISecrets) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	r := make(map[string]string, len(s))
	for k := range s {
		r[k] = Redacted
	}
	return json.Marshal(r)
}

// Copy returns a copy.
func (s CSISecrets) Copy() CSISecrets {
	if s == nil {
		return nil
	}
	c := make(CSISecrets, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}
