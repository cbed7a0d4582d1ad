// Package clienttest starts real client agents for tests: a temp data
// dir, real RPC to the servers given, real plugin processes. Tests stop a
// client (as if its machine died) and start it again on the same data dir.
package clienttest
