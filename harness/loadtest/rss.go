package loadtest

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is a process's resident set, from /proc/PID/status, in bytes.
type Memory struct {
	RSS  int64 // VmRSS: all of it
	Anon int64 // RssAnon: the Go heap, stacks and the runtime's own
	File int64 // RssFile: mapped files, such as raft's bolt log store
}

// RSS reads the resident set of agent a's process.
func RSS(a *Agent) (Memory, error) {
	pid := a.PID()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("loadtest: RSS of %s: %w", a.Name, err)
	}
	defer f.Close()
	var m Memory
	fields := map[string]*int64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), "\t")
		dst := fields[name]
		if !ok || dst == nil {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("loadtest: RSS of %s: parse %q: %w", a.Name, sc.Text(), err)
		}
		*dst = kb << 10
	}
	if m.RSS == 0 {
		return Memory{}, fmt.Errorf("loadtest: RSS of %s: no VmRSS in /proc/%d/status", a.Name, pid)
	}
	return m, nil
}
