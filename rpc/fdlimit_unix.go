//go:build unix

package rpc

import "syscall"

// fdLimit returns the process's soft limit on open files, if it can be
// read. An unlimited one reads as a huge number.
func fdLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return uint64(rl.Cur), true
}
