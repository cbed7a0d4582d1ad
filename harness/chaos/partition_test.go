package chaos

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

func TestCutRules(t *testing.T) {
	a, b := &Agent{Addr: "127.0.0.11"}, &Agent{Addr: "127.0.0.12"}
	render := func(rules [][]string) []string {
		var out []string
		for _, r := range rules {
			out = append(out, strings.Join(r[:7], " "))
		}
		return out
	}
	both := render(cutRules([]*Agent{a}, []*Agent{b}, false))
	must.Eq(t, []string{
		"INPUT -i lo -s 127.0.0.11 -d 127.0.0.12",
		"OUTPUT -o lo -s 127.0.0.11 -d 127.0.0.12",
		"INPUT -i lo -s 127.0.0.12 -d 127.0.0.11",
		"OUTPUT -o lo -s 127.0.0.12 -d 127.0.0.11",
	}, both)
	oneWay := render(cutRules([]*Agent{a}, []*Agent{b}, true))
	must.Eq(t, both[:2], oneWay, must.Sprint("one-way drops only what a sends"))
	for _, r := range cutRules([]*Agent{a}, []*Agent{b}, false) {
		must.StrContains(t, strings.Join(r, " "), "--comment "+ruleTag+" -j DROP", must.Sprint("every rule is tagged for the sweep"))
	}
}
