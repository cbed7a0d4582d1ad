// Package dynamicplugins is the client's registry of CSI plugins on this
// node. Two sources feed it: plugins declared in the client config
// (`plugin "ID" { type, socket }`, run outside berth) and plugin tasks,
// which register when they become healthy and deregister when they stop.
// Subscribers (the plugin manager) get live updates.
//
// It owns the PluginInfo type, its validation, and the registry. It
// imports only structs, hclog and the standard library; it must not import
// gRPC or the CSI spec (client/csi owns those) nor the plugin manager,
// which consumes it.
//
// Concurrency: a *Registry is safe for concurrent use. Register and
// Deregister never block on subscribers. Each subscription has one
// goroutine, owned by the context passed to Subscribe: it ends, and closes
// the channel, when that context ends. A subscription delivers the
// difference between what it last delivered and the registry's current
// state, so a slow subscriber skips intermediate states (a plugin
// registered and deregistered in between is never seen) but always
// converges to the current state, in order per plugin.
package dynamicplugins
