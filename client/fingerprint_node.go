package client

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/berth-csi/berth/structs"
)

// fallbackMHz is a core's compute when the kernel says nothing of its
// clock (some VMs): the operator sets client { cpu_total_compute } for
// an exact figure.
const fallbackMHz = 1000

// nodeResources fingerprints what the node offers: the cores this
// process may run on (its affinity mask), their compute (cores × MHz, or
// the config's CPUTotalCompute), and its memory (the config's
// MemoryTotalMB, or the kernel's total RAM).
func nodeResources(cfg *Config) (*structs.NodeResources, error) {
	cores, err := usableCores()
	if err != nil {
		return nil, err
	}
	r := &structs.NodeResources{Cores: len(cores)}
	r.CPU = cfg.CPUTotalCompute
	if r.CPU == 0 {
		r.CPU = r.Cores * coreMHz()
	}
	r.MemoryMB = cfg.MemoryTotalMB
	if r.MemoryMB == 0 {
		var si unix.Sysinfo_t
		if err := unix.Sysinfo(&si); err != nil {
			return nil, fmt.Errorf("client: read the node's memory: %w", err)
		}
		r.MemoryMB = int(uint64(si.Totalram) * uint64(si.Unit) >> 20)
	}
	return r, nil
}

// usableCores lists the cores this process may run on (its affinity
// mask), which tasks are given.
func usableCores() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("client: read the CPUs it may use: %w", err)
	}
	var cores []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			cores = append(cores, i)
		}
	}
	return cores, nil
}

// coreMHz is one core's clock: cpufreq's maximum, which stays put, else
// the highest "cpu MHz" of /proc/cpuinfo (the current clock, which moves
// with frequency scaling: only where cpufreq says nothing), else
// fallbackMHz.
func coreMHz() int {
	if b, err := os.ReadFile(maxFreqPath); err == nil {
		if khz, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil && khz > 0 {
			return int(khz / 1000)
		}
	}
	best := 0.0
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok || strings.TrimSpace(k) != "cpu MHz" {
				continue
			}
			if mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && mhz > best {
				best = mhz
			}
		}
		f.Close()
	}
	if best == 0 {
		return fallbackMHz
	}
	return int(best)
}

// maxFreqPath is cpufreq's maximum clock of a core, in kHz.
const maxFreqPath = "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"

// nodeAttributes are the node's fingerprinted attributes, which
// constraints read as ${attr.NAME}.
func nodeAttributes(r *structs.NodeResources) map[string]string {
	attrs := map[string]string{
		"cpu.arch":     runtime.GOARCH,
		"kernel.name":  runtime.GOOS,
		"cpu.numcores": strconv.Itoa(r.Cores),
		// The compute and memory the node has, before what it reserves.
		"cpu.totalcompute":  strconv.Itoa(r.CPU),
		"memory.totalbytes": strconv.FormatUint(uint64(r.MemoryMB)<<20, 10),
		"unique.hostname":   hostname(),
		"cpu.frequency":     strconv.Itoa(r.MHzPerCore()),
		"kernel.version":    kernelRelease(),
		"os.name":           osRelease("ID"),
		"os.version":        osRelease("VERSION_ID"),
	}
	for k, v := range attrs {
		if v == "" {
			delete(attrs, k)
		}
	}
	return attrs
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

// kernelRelease is uname -r.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// osRelease is a field of /etc/os-release (os-release(5)), unquoted; ""
// when it has none.
func osRelease(key string) string {
	f, err := os.Open("/etc/os-release")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && k == key {
			if u, err := strconv.Unquote(v); err == nil {
				return u
			}
			return strings.Trim(v, `'"`)
		}
	}
	return ""
}

// groupUsers lists the users of the named groups in the node's own files:
// the members /etc/group lists, and the users whose primary group
// /etc/passwd says is one of them (group(5), passwd(5)). Users only a
// directory service knows are not listed: the start of their task checks
// their groups with the node's resolver.
func groupUsers(groups []string) []string {
	gids, members := map[string]bool{}, map[string]bool{}
	scanColon("/etc/group", func(f []string) {
		// name:password:gid:member,member
		if len(f) < 4 || !slices.Contains(groups, f[0]) {
			return
		}
		gids[f[2]] = true
		for _, m := range strings.Split(f[3], ",") {
			if m != "" {
				members[m] = true
			}
		}
	})
	scanColon("/etc/passwd", func(f []string) {
		// name:password:uid:gid:gecos:home:shell
		if len(f) >= 4 && gids[f[3]] {
			members[f[0]] = true
		}
	})
	out := make([]string, 0, len(members))
	for m := range members {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// scanColon calls fn with the colon-separated fields of each line of a
// file; a missing file has no lines.
func scanColon(path string, fn func([]string)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			fn(strings.Split(line, ":"))
		}
	}
}
