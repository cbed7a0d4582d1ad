package fleet

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat: Linux reports
// them in USER_HZ, which is 100 on every architecture.
const userHZ = 100

// CPUTime is the CPU time, user and system, that process pid has used
// (/proc/PID/stat utime + stime); pid 0 is this process.
func CPUTime(pid int) (time.Duration, error) {
	path := "/proc/self/stat"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("fleet: CPU time: %w", err)
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted here come after its closing parenthesis, the state first
	// (field 3), so utime (14) and stime (15) are the 12th and 13th.
	i := strings.LastIndexByte(string(b), ')')
	fields := strings.Fields(string(b[i+1:]))
	if i < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("fleet: CPU time: %s is not in the form of /proc/PID/stat: %q", path, b)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("fleet: CPU time: %s: field %q: %w", path, f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// CPUShare is the share of one core that cpu used over wall: 0.5 is
// half a core.
func CPUShare(cpu, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return cpu.Seconds() / wall.Seconds()
}

// CPUMeter measures the CPU time of a set of processes over a window.
type CPUMeter struct {
	pids  []int
	start []time.Duration
	at    time.Time
}

// StartCPU starts measuring the processes pids.
func StartCPU(pids ...int) (*CPUMeter, error) {
	m := &CPUMeter{pids: pids, at: time.Now()}
	for _, pid := range pids {
		c, err := CPUTime(pid)
		if err != nil {
			return nil, err
		}
		m.start = append(m.start, c)
	}
	return m, nil
}

// Shares is each process's share of one core since StartCPU, in the
// order of pids, and the window's length.
func (m *CPUMeter) Shares() ([]float64, time.Duration, error) {
	wall := time.Since(m.at)
	out := make([]float64, len(m.pids))
	for i, pid := range m.pids {
		c, err := CPUTime(pid)
		if err != nil {
			return nil, 0, err
		}
		out[i] = CPUShare(c-m.start[i], wall)
	}
	return out, wall, nil
}
