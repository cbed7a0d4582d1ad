package structs

// CSIVolume is a volume berth knows, registered by hand or created through
// a plugin's controller. Plugin health (Schedulable, the counts, Provider)
// and the claiming allocations (ReadAllocs, WriteAllocs) are joined in on
// read (state's CSIVolumeByID and the volume change events).
type CSIVolume struct {
	ID              string
	Namespace       string
	Name            string
	ExternalID      string
	PluginID        string
	Provider        string
	ProviderVersion string

	RequestedCapabilities []*CSIVolumeCapability
	AccessMode            CSIVolumeAccessMode     // in use while claimed
	AttachmentMode        CSIVolumeAttachmentMode // in use while claimed

	MountOptions *CSIMountOptions `json:",omitempty"`
	Secrets      CSISecrets       `json:",omitempty"`

	// EncryptedSecrets is how the servers store Secrets: sealed under the
	// keyring's active root key, bound to the volume's namespace and ID.
	// Secrets is empty in every volume the servers write to raft; a volume
	// stored before encryption may still hold them in clear until its
	// next write. Never shown.
	EncryptedSecrets *EncryptedSecrets `codec:"EncryptedSecrets" json:"-"`

	Parameters map[string]string
	Context    map[string]string
	Topologies []*CSITopology
	// PreferredTopologies are where the volume is best used, best first
	// (topology_request { preferred }): sent to CreateVolume, and the
	// scheduler tries nodes in them, in order, before the rest of
	// Topologies.
	PreferredTopologies []*CSITopology `json:",omitempty"`

	RequestedCapacityMin int64
	RequestedCapacityMax int64
	Capacity             int64
	SnapshotID           string
	CloneID              string

	// NodeExpansion is set while a node expansion the plugin asked for
	// (ControllerExpandVolume said node_expansion_required) is not done:
	// no node had the volume staged or published, or one failed. The next
	// publish of the volume does it; the servers keep it, never the caller.
	NodeExpansion *CSIVolumeNodeExpansion `json:",omitempty"`

	// Claims by allocation ID. Read and write claims are held while taken;
	// a released claim moves to PastClaims until it is freed.
	ReadClaims  map[string]*CSIVolumeClaim
	WriteClaims map[string]*CSIVolumeClaim
	PastClaims  map[string]*CSIVolumeClaim
	// FreedClaims are the last claims freed (at most MaxFreedClaims),
	// oldest first, each as it was when freed, with its timeline: for
	// `volume status -verbose` and the allocations' timelines. They hold
	// nothing: InUse and every claim rule ignore them.
	FreedClaims []*CSIVolumeClaim `json:",omitempty"`

	// Derived on read.
	Schedulable         bool
	ControllerRequired  bool
	ControllersHealthy  int
	ControllersExpected int
	NodesHealthy        int
	NodesExpected       int
	ReadAllocs          map[string]*AllocListStub
	WriteAllocs         map[string]*AllocListStub

	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a deep copy.
func (v *CSIVolume) Copy() *CSIVolume {
	if v == nil {
		return nil
	}
	c := *v
	if v.RequestedCapabilities != nil {
		c.RequestedCapabilities = make([]*CSIVolumeCapability, len(v.RequestedCapabilities))
		for i, rc := range v.RequestedCapabilities {
			if rc != nil { // Validate reports it
				cc := *rc
				c.RequestedCapabilities[i] = &cc
			}
		}
	}
	c.MountOptions = v.MountOptions.Copy()
	c.Secrets = v.Secrets.Copy()
	c.EncryptedSecrets = v.EncryptedSecrets.Copy()
	c.Parameters = copyStringMap(v.Parameters)
	c.Context = copyStringMap(v.Context)
	if v.Topologies != nil {
		c.Topologies = make([]*CSITopology, len(v.Topologies))
		for i, t := range v.Topologies {
			c.Topologies[i] = t.Copy()
		}
	}
	if v.PreferredTopologies != nil {
		c.PreferredTopologies = make([]*CSITopology, len(v.PreferredTopologies))
		for i, t := range v.PreferredTopologies {
			c.PreferredTopologies[i] = t.Copy()
		}
	}
	c.NodeExpansion = v.NodeExpansion.Copy()
	c.ReadClaims = copyClaims(v.ReadClaims)
	c.WriteClaims = copyClaims(v.WriteClaims)
	c.PastClaims = copyClaims(v.PastClaims)
	if v.FreedClaims != nil {
		c.FreedClaims = make([]*CSIVolumeClaim, len(v.FreedClaims))
		for i, fc := range v.FreedClaims {
			c.FreedClaims[i] = fc.Copy()
		}
	}
	c.ReadAllocs = copyAllocStubs(v.ReadAllocs)
	c.WriteAllocs = copyAllocStubs(v.WriteAllocs)
	return &c
}

// Sanitized returns a copy fit for an API response: no secrets, clear or
// encrypted, mount flags redacted.
func (v *CSIVolume) Sanitized() *CSIVolume {
	c := v.Copy()
	c.Secrets = nil
	c.EncryptedSecrets = nil
	c.MountOptions = v.MountOptions.Redacted()
	return c
}

// MaxFreedClaims is how many freed claims a volume keeps (FreedClaims).
const MaxFreedClaims = 4

// KeepFreed adds c, just freed, to the volume's FreedClaims, dropping the
// oldest beyond MaxFreedClaims. v must be a copy the caller owns.
func (v *CSIVolume) KeepFreed(c *CSIVolumeClaim) {
	kept := append([]*CSIVolumeClaim(nil), v.FreedClaims...)
	kept = append(kept, c)
	if over := len(kept) - MaxFreedClaims; over > 0 {
		kept = kept[over:]
	}
	v.FreedClaims = kept
}

// HeldClaim is alloc allocID's claim on the volume while it holds it:
// taken (read or write) or being released; nil once freed.
func (v *CSIVolume) HeldClaim(allocID string) *CSIVolumeClaim {
	for _, m := range []map[string]*CSIVolumeClaim{v.ReadClaims, v.WriteClaims, v.PastClaims} {
		if c := m[allocID]; c != nil {
			return c
		}
	}
	return nil
}

// ClaimOf is alloc allocID's claim on the volume, taken, being released
// or freed (one of FreedClaims), or nil.
func (v *CSIVolume) ClaimOf(allocID string) *CSIVolumeClaim {
	if c := v.HeldClaim(allocID); c != nil {
		return c
	}
	for i := len(v.FreedClaims) - 1; i >= 0; i-- {
		if c := v.FreedClaims[i]; c != nil && c.AllocID == allocID {
			return c
		}
	}
	return nil
}

// InUse reports whether any claim, taken or being released, holds the volume.
func (v *CSIVolume) InUse() bool {
	return len(v.ReadClaims)+len(v.WriteClaims)+len(v.PastClaims) > 0
}

// ClaimingAllocs lists the allocation IDs of every claim, sorted.
func (v *CSIVolume) ClaimingAllocs() []string {
	ids := make([]string, 0, len(v.ReadClaims)+len(v.WriteClaims)+len(v.PastClaims))
	for _, m := range []map[string]*CSIVolumeClaim{v.ReadClaims, v.WriteClaims, v.PastClaims} {
		for id := range m {
			ids = append(ids, id)
		}
	}
	sortStrings(ids)
	return ids
}

// HasCapability reports whether the volume was requested with this pair.
func (v *CSIVolume) HasCapability(a CSIVolumeAccessMode, m CSIVolumeAttachmentMode) bool {
	for _, c := range v.RequestedCapabilities {
		if c.AccessMode == a && c.AttachmentMode == m {
			return true
		}
	}
	return false
}

// Validate checks what a registration must carry: no null entries, the
// IDs (ValidateName) and the capabilities. Errors name the volume and the
// field.
func (v *CSIVolume) Validate() error {
	var p problems
	p.addErr("", ValidateName(NameVolumeID, v.ID))
	if v.Namespace != "" {
		p.addErr("", ValidateName(NameNamespace, v.Namespace))
	}
	if v.PluginID == "" {
		p.add("missing plugin_id")
	} else {
		p.addErr("plugin_id: ", ValidateName(NamePluginID, v.PluginID))
	}
	if v.ExternalID == "" {
		p.add("missing external_id")
	}
	if len(v.RequestedCapabilities) == 0 {
		p.add("needs at least one capability block (access_mode, attachment_mode)")
	}
	for i, c := range v.RequestedCapabilities {
		if c == nil {
			p.add("capability %d is null", i+1)
			continue
		}
		if err := c.Validate(); err != nil {
			p.add("capability %d: %v", i+1, err)
		}
	}
	for i, t := range v.Topologies {
		if t == nil {
			p.add("topology %d is null", i+1)
		}
	}
	for i, t := range v.PreferredTopologies {
		switch {
		case t == nil:
			p.add("preferred topology %d is null", i+1)
		case len(v.Topologies) > 0 && !v.AccessibleFrom(t):
			// CSI: every preferred topology is within the requisite ones.
			p.add("preferred topology %d %s is outside every required topology; prefer a part of what is required", i+1, t)
		}
	}
	if v.MountOptions != nil {
		p.addErr("mount_options: ", v.MountOptions.GroupPolicy.Validate())
	}
	if v.RequestedCapacityMax > 0 && v.RequestedCapacityMin > v.RequestedCapacityMax {
		p.add("capacity_min (%d) is larger than capacity_max (%d)", v.RequestedCapacityMin, v.RequestedCapacityMax)
	}
	if len(p.list) > 0 {
		name := QuoteName(v.ID)
		if v.ID == "" {
			name = "(no id)"
		}
		return NewError(CodeBadRequest, "volume %s: %s", name, p.String())
	}
	return nil
}

// Stub returns the list form of the volume.
func (v *CSIVolume) Stub() *CSIVolumeListStub {
	return &CSIVolumeListStub{
		ID:                  v.ID,
		Namespace:           v.Namespace,
		Name:                v.Name,
		ExternalID:          v.ExternalID,
		PluginID:            v.PluginID,
		Provider:            v.Provider,
		AccessMode:          v.AccessMode,
		AttachmentMode:      v.AttachmentMode,
		CurrentReaders:      len(v.ReadClaims),
		CurrentWriters:      len(v.WriteClaims),
		Schedulable:         v.Schedulable,
		ControllerRequired:  v.ControllerRequired,
		ControllersHealthy:  v.ControllersHealthy,
		ControllersExpected: v.ControllersExpected,
		NodesHealthy:        v.NodesHealthy,
		NodesExpected:       v.NodesExpected,
		CreateIndex:         v.CreateIndex,
		ModifyIndex:         v.ModifyIndex,
	}
}

// CSIVolumeListStub is a volume as lists show it.
type CSIVolumeListStub struct {
	ID                  string
	Namespace           string
	Name                string
	ExternalID          string
	PluginID            string
	Provider            string
	AccessMode          CSIVolumeAccessMode
	AttachmentMode      CSIVolumeAttachmentMode
	CurrentReaders      int
	CurrentWriters      int
	Schedulable         bool
	ControllerRequired  bool
	ControllersHealthy  int
	ControllersExpected int
	NodesHealthy        int
	NodesExpected       int
	CreateIndex         uint64
	ModifyIndex         uint64
}

func copyAllocStubs(m map[string]*AllocListStub) map[string]*AllocListStub {
	if m == nil {
		return nil
	}
	c := make(map[string]*AllocListStub, len(m))
	for k, v := range m {
		if v == nil {
			c[k] = nil
			continue
		}
		vc := *v
		c[k] = &vc
	}
	return c
}

// JoinPlugin copies the plugin's identity and health into the volume. plug
// must already count only healthy instances on ready nodes
// (CSIPluginDenormalize); nil means no node runs the plugin any more.
func (v *CSIVolume) JoinPlugin(plug *CSIPlugin) {
	if plug == nil {
		v.Provider, v.ProviderVersion = "", ""
		v.ControllerRequired = false
		v.ControllersHealthy, v.ControllersExpected, v.NodesHealthy, v.NodesExpected = 0, 0, 0, 0
		v.Schedulable = false
		return
	}
	v.Provider = plug.Provider
	v.ProviderVersion = plug.Version
	v.ControllerRequired = plug.ControllerRequired
	v.ControllersHealthy = plug.ControllersHealthy
	v.ControllersExpected = plug.ControllersExpected
	v.NodesHealthy = plug.NodesHealthy
	v.NodesExpected = plug.NodesExpected
	v.Schedulable = plug.NodesHealthy > 0 && (!plug.ControllerRequired || plug.ControllersHealthy > 0)
}
