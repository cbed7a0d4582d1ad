package command

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/berth-csi/berth/structs"
)

// secretFlag collects repeated -secret key=value flags. A bad one is kept
// in err rather than returned from Set, because the flag package would
// print the rejected value, which may be a secret. cmd names the command
// in messages ("volume delete").
type secretFlag struct {
	cmd string
	m   map[string]string
	n   int
	err error
}

// defineSecrets defines -secret on fs. parse reports a bad one as a usage
// error.
func (m *meta) defineSecrets(fs *flag.FlagSet) *secretFlag {
	m.secrets = &secretFlag{cmd: m.cmd.name}
	fs.Var(m.secrets, "secret", "")
	return m.secrets
}

func (s *secretFlag) String() string {
	if s == nil || len(s.m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(s.m))
	for k := range s.m {
		keys = append(keys, k+"="+structs.Redacted)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

func (s *secretFlag) Set(v string) error {
	s.n++
	if s.err != nil {
		return nil
	}
	key, value, found := strings.Cut(v, "=")
	switch {
	case !found:
		s.err = fmt.Errorf("-secret number %d has no '='; write -secret key=value", s.n)
	case strings.TrimSpace(key) == "":
		s.err = fmt.Errorf("-secret number %d has no key before '='; write -secret key=value", s.n)
	case strings.Contains(key, ","):
		s.err = fmt.Errorf("-secret key %q holds ','; secret keys cannot", key)
	case strings.Contains(value, ","):
		s.err = fmt.Errorf("-secret %q: the value holds ','; secrets sent with %s cannot", key, s.cmd)
	case hasKey(s.m, key):
		s.err = fmt.Errorf("-secret %q is given twice; give each secret once", key)
	}
	if s.err != nil {
		return nil
	}
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[key] = value
	return nil
}

// mapFlag collects repeated -<name> key=value flags whose values are not
// secret, such as -parameter. The value may hold '=' and ','.
type mapFlag struct {
	name string
	m    map[string]string
}

func (f *mapFlag) String() string {
	if f == nil {
		return ""
	}
	return formatMap(f.m)
}

func (f *mapFlag) Set(v string) error {
	key, value, found := strings.Cut(v, "=")
	switch {
	case !found:
		return fmt.Errorf("no '='; write -%s key=value", f.name)
	case strings.TrimSpace(key) == "":
		return fmt.Errorf("no key before '='; write -%s key=value", f.name)
	case hasKey(f.m, key):
		return fmt.Errorf("key %q is given twice; give each once", key)
	}
	if f.m == nil {
		f.m = map[string]string{}
	}
	f.m[key] = value
	return nil
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// stringsFlag collects a flag given more than once, such as
// -additional-dnsname.
type stringsFlag []string

func (f *stringsFlag) String() string { return strings.Join(*f, ",") }

func (f *stringsFlag) Set(v string) error {
	*f = append(*f, v)
	return nil
}
