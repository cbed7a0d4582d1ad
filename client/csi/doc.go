// Package csi is berth's CSI client: the one package in berth that imports
// gRPC and the CSI spec (`make imports` enforces it). It dials a plugin's
// unix socket, makes the identity, node and controller calls the client
// agent needs, turns their answers into structs types, and watches the
// gRPC connection so that a lost plugin is an event.
//
// Controller calls: ControllerGetCapabilities, CreateVolume, DeleteVolume
// (an already deleted volume, NOT_FOUND included, is success),
// ValidateVolumeCapabilities (an unconfirmed answer is Confirmed false
// with the plugin's message, and no error; a confirmed one is compared
// with the request, field by field, as the spec requires),
// ControllerExpandVolume, ControllerPublishVolume (returns the publish
// context), ControllerUnpublishVolume, ListVolumes (one page), and the
// snapshot calls CreateSnapshot, DeleteSnapshot and ListSnapshots. Node
// calls: NodeGetInfo, NodeGetCapabilities, NodeStageVolume,
// NodeUnstageVolume, NodePublishVolume, NodeUnpublishVolume and
// NodeExpandVolume. The undoing calls (ControllerUnpublishVolume,
// NodeUnstageVolume, NodeUnpublishVolume) treat NOT_FOUND as done, like
// DeleteVolume. A request berth can tell is invalid fails with
// ErrInvalidRequest before any call.
//
// Errors are classified once, here: every failed call returns an *Error
// that names the plugin, the call and the gRPC code (`plugin "hostpath":
// Probe: Unavailable: ...`); IsFinal says whether the operation definitely
// did not happen (final) or may still be in progress and should be retried
// (the external-attacher rule); callers retry with
// backoff.Retry(ctx, policy, csi.IsFinal, fn) (internal/backoff). Callers
// never see a gRPC type.
//
// Every call that reaches gRPC is counted and timed by plugin ID, method
// and gRPC code (a unary interceptor, metrics.go: berth_csi_calls_total,
// berth_csi_call_duration_seconds).
//
// Imports: the standard library, structs, internal/telemetry (the call
// metrics), gRPC, protobuf, the CSI spec and hclog. It must not import
// other berth packages: it is the leaf that pluginmanager and
// volumemanager build on.
//
// Concurrency: a *Client is safe for concurrent use. Every call takes a
// context and runs under a per-call timeout derived from it. The only
// goroutines this package starts are the connection watchers, each owned
// by the context passed to WatchConnection and ended with it (or with
// Close).
//
// Secrets: requests are logged (at trace level) only after every field the
// CSI spec marks csi_secret, and every mount flag (which may hold
// credentials), has been stripped; secrets never reach a log line or an
// error message, and mount flag values never reach an error message.
package csi
