// Command berth-hostpath is berth's reference CSI plugin: a CSI v1
// plugin whose volumes are directories under a root directory on one
// node. It serves the Identity, Controller and Node services on one unix
// socket and exists so that berth (and its tests) can drive a real plugin
// through the whole volume lifecycle.
//
//	berth-hostpath -endpoint unix:///run/berth/hostpath.sock -root /var/lib/berth-hostpath \
//	    [-node-id ID] [-name hostpath.berth.dev] [-max-volumes N] [-topology key=value,...] \
//	    [-disable-attach] [-disable-stage] [-log-level info] | -version
//
// # What it owns
//
// Everything under -root:
//
//	state.json         volumes, snapshots, attachments, stage and publish records
//	volumes/<id>/      one directory per volume (a block volume's holds disk.img)
//	snapshots/<id>/    one full copy per snapshot
//
// The state file is rewritten atomically (temp file, fsync, rename) after
// every change, so volumes, snapshots and node mounts are remembered
// across restarts. A state file that does not parse stops the plugin at
// start with an error naming the file; it is never overwritten.
//
// Instances on several nodes may share one root (a network filesystem, or
// one directory on a machine running several clients): each change is
// made under a lock of the root on the state as the file holds it then,
// and reads pick up what another instance wrote (store_shared.go). Run
// them without -topology and with -disable-attach.
//
// Volumes: CreateVolume makes a directory (empty, or a copy of a snapshot
// or of another volume); capacity is recorded and reported, not enforced.
// A volume created with the block access type is a sparse image of its
// capacity instead (block.go): staged (or, under -disable-stage,
// published) as a loop device attached with the loop ioctls, published as
// a device node of it that the plugin makes at the target, expanded by
// growing the image and refreshing the device; a volume is one access
// type or the other, and a capability of the other is INVALID_ARGUMENT
// (unconfirmed by ValidateVolumeCapabilities). fs_type is ignored: a bind
// mount keeps the filesystem of the root. Mount flags are limited to
// what a bind remount applies (ro, nosuid, nodev, noexec, the atime flags).
//
// ControllerPublishVolume records an attachment to this node (-node-id is
// the only node; others are NOT_FOUND), counts it against -max-volumes
// and carries the readonly flag to the node; NodeStageVolume (or, with
// -disable-stage, NodePublishVolume) refuses a volume that is not
// attached. -disable-attach drops the controller publish calls.
// NodeStageVolume bind-mounts the volume directory on the staging path
// (which the CO creates); NodePublishVolume creates the target directory
// and bind-mounts the staging path on it (the volume directory under
// -disable-stage), and NodeUnpublishVolume unmounts it and removes the
// directory it created. Read-only comes from the request, a reader-only
// access mode or a read-only ControllerPublishVolume, and is applied with
// a bind remount. Mount points are found in mountinfo (moby/sys/mountinfo).
// A staging or target path that is a symlink is refused, never followed:
// not mounted on, and not unmounted (UMOUNT_NOFOLLOW).
// NodeGetVolumeStats reports what the volume's files take (allocated
// blocks and inodes, counted as du does, at most a million entries)
// against its capacity; NodeGetVolumeHealth and ControllerGetVolumeHealth
// (GET_VOLUME_HEALTH) report it INACCESSIBLE when its directory is gone,
// and the node call also when the path asked about is not mounted.
// A volume's directory has mode 0777, as csi-driver-host-path's do, so
// that a workload writes into it whatever user it runs as (berth runs
// tasks as nobody by default); the volumes/ and snapshots/ dirs that hold
// them are 0700, so that a volume is reached only through its mounts. A
// clone or a restore gets mode 0777 too; the files inside keep theirs.
//
// # Imports
//
// Like client/csi, and unlike the rest of berth, it imports gRPC and the
// CSI spec. Outside its tests it imports no berth package: it is a
// plugin, not part of the orchestrator. Mounting needs root
// (CAP_SYS_ADMIN); the tests that mount skip without it.
//
// # Concurrency
//
// One mutex (driver.opMu) serialises every call that changes the state
// or the mount table, so each is "look, act, record" without races; a
// long copy holds it. Read-only calls (lists, gets, stats, Probe) use the
// store's immutable current state and do not wait for it. Node calls
// record what they are about to mount before mounting and forget the
// record if the mount fails, so a retry after a crash finishes the work.
// On SIGINT or SIGTERM the server stops gracefully (running calls get
// 10 s) and removes its socket.
//
// # Logs
//
// hclog to stderr. Requests are logged only through sanitize, which drops
// every csi_secret field (the secrets maps) and mount flags.
package main
