//go:build !unix

package rpc

// fdLimit is unknown on this platform.
func fdLimit() (uint64, bool) { return 0, false }
