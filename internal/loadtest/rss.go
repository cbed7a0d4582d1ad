package loadtest

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// RSS is the resident set size of agent a's process (VmRSS), in bytes.
func RSS(a *Agent) (int64, error) {
	pid := a.PID()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("loadtest: RSS of %s: %w", a.Name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("loadtest: RSS of %s: parse %q: %w", a.Name, sc.Text(), err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("loadtest: RSS of %s: no VmRSS in /proc/%d/status", a.Name, pid)
}
