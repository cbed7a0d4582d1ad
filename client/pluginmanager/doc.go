// Package pluginmanager fingerprints the CSI plugins on this node (Nomad's
// csimanager). It follows the dynamicplugins registry; for each plugin
// instance it dials the plugin's socket and calls GetPluginInfo,
// GetPluginCapabilities and Probe, then NodeGetInfo and
// NodeGetCapabilities (node and monolith plugins) and
// ControllerGetCapabilities (controller and monolith plugins). It re-probes
// every ProbeInterval, at once when the gRPC connection is lost or regained,
// with a bounded backoff while a plugin is unhealthy, and every 100ms (a
// stat) while its socket does not exist yet. Whenever an
// instance's info or health changes it emits an Update (the full current
// controller and node info of that plugin, and a node event when its health
// changed) through Config.OnUpdate; deregistration emits an Update with
// both sides nil.
//
// Imports: structs, client/csi (its only door to gRPC), client/dynamicplugins,
// internal/backoff, hclog and the standard library. It must not import gRPC or the CSI spec
// itself, nor server, state or fsm.
//
// Concurrency: Run owns one goroutine per plugin instance and stops every
// one of them before it returns. Each instance goroutine owns its CSI
// clients and their connection watchers. Every plugin call has a timeout
// (ProbeTimeout), so a hung plugin makes its instance unhealthy, never a
// stuck manager. OnUpdate is called from one goroutine at a time, in the
// order the changes happened, and must not block for long (hand the update
// to a channel or a coalescing updater). Plugins may be called at any time,
// also from OnUpdate.
package pluginmanager
