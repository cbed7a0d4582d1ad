// Package keyedsem is one counting semaphore per key, waited for under a
// context: the volume manager's per-volume lock (a limit of one) and the
// client's bound on controller calls per plugin are both made of it. A
// key's semaphore exists only while someone holds or waits for it, so the
// set of keys does not grow with every volume or plugin ever seen.
//
// Imports: the standard library only.
//
// Concurrency: a *Semaphores is safe for concurrent use; its Limit is set
// before its first use and not changed after.
package keyedsem
