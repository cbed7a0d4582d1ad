package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// ruleTag marks the iptables rules of this test process (a -m comment), so
// that cleanup can find and delete every one it left, and only those.
var ruleTag = fmt.Sprintf("berth-chaos-%d", os.Getpid())

// Partition is a set of iptables DROP rules in place; Heal deletes them.
type Partition struct {
	rules [][]string // each without the leading -I/-D
}

// isolationRules cut agent a off from every agent in others, both ways:
// DROP by -s/-d address pairs on lo in INPUT and OUTPUT, and, because a
// server dials from 127.0.0.1 rather than its bind address, DROP in OUTPUT
// of what a server's gid sends to the other side's address.
func isolationRules(a *Agent, others []*Agent) [][]string {
	drop := func(r ...string) []string {
		return append(r, "-m", "comment", "--comment", ruleTag, "-j", "DROP")
	}
	owner := func(gid uint32, dst string) []string {
		return drop("OUTPUT", "-o", "lo", "-d", dst, "-m", "owner", "--gid-owner", strconv.FormatUint(uint64(gid), 10))
	}
	var rules [][]string
	for _, o := range others {
		rules = append(rules,
			drop("INPUT", "-i", "lo", "-s", a.Addr, "-d", o.Addr),
			drop("INPUT", "-i", "lo", "-s", o.Addr, "-d", a.Addr),
			drop("OUTPUT", "-o", "lo", "-s", a.Addr, "-d", o.Addr),
			drop("OUTPUT", "-o", "lo", "-s", o.Addr, "-d", a.Addr))
		if a.Server {
			rules = append(rules, owner(a.GID, o.Addr))
		}
		if o.Server {
			rules = append(rules, owner(o.GID, a.Addr))
		}
	}
	return rules
}

// Isolate cuts agent a off from every other agent of the cluster. On an
// error the rules already added are deleted.
func (c *Cluster) Isolate(a *Agent) (*Partition, error) {
	var others []*Agent
	for _, o := range append(append([]*Agent{}, c.Servers...), c.Clients...) {
		if o != a {
			others = append(others, o)
		}
	}
	p := &Partition{}
	for _, r := range isolationRules(a, others) {
		if err := iptables("-I", r); err != nil {
			return nil, errors.Join(err, p.Heal())
		}
		p.rules = append(p.rules, r)
	}
	return p, nil
}

// Heal deletes the partition's rules; a second call does nothing.
func (p *Partition) Heal() error {
	var errs []error
	for _, r := range p.rules {
		errs = append(errs, iptables("-D", r))
	}
	p.rules = nil
	return errors.Join(errs...)
}

func iptables(op string, rule []string) error {
	out, err := exec.Command("iptables", append([]string{op}, rule...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chaos: iptables %s %s: %v: %s", op, strings.Join(rule, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// SweepRules deletes every rule of this test process still in INPUT or
// OUTPUT, whoever added it: the last word of cleanup, even after a
// failure that skipped a Heal. It returns how many it deleted.
func SweepRules() (int, error) {
	n := 0
	var errs []error
	for _, chain := range []string{"INPUT", "OUTPUT"} {
		out, err := exec.Command("iptables", "-S", chain).Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("chaos: iptables -S %s: %w", chain, err))
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			if !strings.Contains(line, ruleTag) || !strings.HasPrefix(line, "-A ") {
				continue
			}
			// "-A CHAIN ..." lists the rule as -D takes it; the comment is
			// one word (no spaces), so splitting on spaces is safe.
			if err := iptables("-D", strings.Fields(strings.TrimPrefix(line, "-A "))); err != nil {
				errs = append(errs, err)
				continue
			}
			n++
		}
	}
	return n, errors.Join(errs...)
}

// IptablesUsable says why iptables cannot be used here, "" when it can:
// it is installed and a rule can be added and deleted.
func IptablesUsable() string {
	if _, err := exec.LookPath("iptables"); err != nil {
		return "iptables is not installed"
	}
	probe := []string{"OUTPUT", "-o", "lo", "-d", "127.0.0.254", "-m", "comment", "--comment", ruleTag, "-j", "DROP"}
	if err := iptables("-I", probe); err != nil {
		return err.Error()
	}
	if err := iptables("-D", probe); err != nil {
		return err.Error()
	}
	return ""
}
