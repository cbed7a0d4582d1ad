// Package volumemanager mounts CSI volumes for the allocations on this
// node: NodeStageVolume once per (plugin, volume), NodePublishVolume once
// per allocation, and the reverse, NodeUnpublishVolume per allocation and
// NodeUnstageVolume when the last allocation on the node is done with the
// volume. Every call is idempotent: mounting again returns the same host
// path, unmounting what is not mounted does nothing. ExpandVolume calls
// NodeExpandVolume for a volume in use here, with the paths it was
// staged and published at.
//
// Usage is persisted. Which allocations use which volume, the paths, and
// the step each volume and allocation is at are written to
// <data dir>/client/csi/volumes.json (temp file, fsync, rename, fsync of
// the dir) before each CSI call and after it succeeds. A new Manager on
// the same data dir (a restarted client) therefore never unstages a volume
// another allocation still uses, and finishes an unmount it had started.
// Secrets, publish and volume contexts are never persisted: the undoing
// calls do not need them.
//
// Paths: each plugin has a host dir, PluginHostDir(data dir, plugin ID),
// holding staging/<volume ID> and per-alloc/<alloc ID>/<volume ID>. A
// plugin that runs in its own mount namespace (dynamicplugins.PluginInfo
// MountDir set) has that host dir bound at MountDir, so the paths sent to
// it are MountDir/<the same relative path>; other plugins get the host
// paths. MountResult.HostPath is always the host path.
//
// Imports: the standard library, hclog, structs, client/csi,
// client/dynamicplugins, internal/atomicfile, internal/backoff and
// client/internal/keyedsem. It must not import gRPC or the CSI spec (only
// client/csi does), nor the client package that owns it.
//
// Concurrency: a *Manager is safe for concurrent use. Calls for the same
// (plugin, volume) are serialized by a per-volume lock, waited for under
// the caller's context; calls for different volumes run in parallel. The
// usage map is guarded by a mutex, and file writes are ordered so that
// each writes a state at least as new as the one before. The package
// starts no goroutines.
package volumemanager
