// Package atomicfile replaces a file's content so that a crash leaves
// either the old content or the new, never a mix: the client's state files
// (the node ID, each alloc's task handles, the volume manager's usage
// record) and the servers' root key files are written with it.
//
// Imports: the standard library only.
//
// Concurrency: Write is safe to call concurrently for different paths;
// writers of one path must order their writes themselves.
package atomicfile
