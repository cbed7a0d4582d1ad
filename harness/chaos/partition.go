package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// ruleTag marks the iptables rules of this test process (a -m comment), so
// that cleanup can find and delete every one it left, and only those.
var ruleTag = fmt.Sprintf("berth-chaos-%d", os.Getpid())

// Partition is a set of iptables DROP rules in place; Heal deletes them.
type Partition struct {
	rules [][]string // each without the leading -I/-D
}

// cutRules drop what each agent of from sends to each agent of to, and,
// unless oneWay, what they send back: DROP by -s/-d address pairs on lo,
// in OUTPUT and INPUT (a loopback packet passes both). Every agent binds
// and dials from its own address, so the pairs catch all its traffic.
func cutRules(from, to []*Agent, oneWay bool) [][]string {
	drop := func(r ...string) []string {
		return append(r, "-m", "comment", "--comment", ruleTag, "-j", "DROP")
	}
	var rules [][]string
	for _, a := range from {
		for _, o := range to {
			rules = append(rules,
				drop("INPUT", "-i", "lo", "-s", a.Addr, "-d", o.Addr),
				drop("OUTPUT", "-o", "lo", "-s", a.Addr, "-d", o.Addr))
			if !oneWay {
				rules = append(rules,
					drop("INPUT", "-i", "lo", "-s", o.Addr, "-d", a.Addr),
					drop("OUTPUT", "-o", "lo", "-s", o.Addr, "-d", a.Addr))
			}
		}
	}
	return rules
}

// Isolate cuts agent a off from every other agent of the cluster.
func (c *Cluster) Isolate(a *Agent) (*Partition, error) {
	return c.cut([]*Agent{a}, c.others(a), false)
}

// Split cuts the agents of side off from all the others, both ways.
func (c *Cluster) Split(side []*Agent) (*Partition, error) {
	return c.cut(side, c.others(side...), false)
}

// DropFrom drops what agent a sends to every other agent; what they send
// to a still arrives (one-way loss).
func (c *Cluster) DropFrom(a *Agent) (*Partition, error) {
	return c.cut([]*Agent{a}, c.others(a), true)
}

// others is every agent of the cluster not in except.
func (c *Cluster) others(except ...*Agent) []*Agent {
	var out []*Agent
	for _, o := range append(append([]*Agent{}, c.Servers...), c.Clients...) {
		if !slices.Contains(except, o) {
			out = append(out, o)
		}
	}
	return out
}

// cut adds cutRules(from, to, oneWay). On an error the rules already added
// are deleted.
func (c *Cluster) cut(from, to []*Agent, oneWay bool) (*Partition, error) {
	p := &Partition{}
	for _, r := range cutRules(from, to, oneWay) {
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
