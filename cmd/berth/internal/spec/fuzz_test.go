package spec

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The fuzz targets read anything without panicking, and keep the
// package's promise about errors: each is an *Error naming the file and a
// line of it. Their seeds are in testdata/fuzz/<target>, which plain go
// test runs; make fuzz looks further.

// checkErrors fails t unless err is nil or *Errors about file, each at a
// line of src (or just past its end).
func checkErrors(t *testing.T, file string, src []byte, err error) {
	t.Helper()
	if err == nil {
		return
	}
	all := []error{err}
	if many, ok := err.(interface{ Unwrap() []error }); ok {
		all = many.Unwrap()
	}
	lines := bytes.Count(src, []byte("\n")) + 1
	for _, e := range all {
		var se *Error
		if !errors.As(e, &se) {
			t.Fatalf("not a *spec.Error: %T %v", e, e)
		}
		if se.File != file || se.Line < 1 || se.Line > lines+1 || se.Msg == "" {
			t.Fatalf("error %q names file %q line %d; src has %d lines", se.Error(), se.File, se.Line, lines)
		}
	}
}

func FuzzParseJob(f *testing.F) {
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, file := range []string{"job.hcl", "job.json"} {
			job, err := ParseJob(file, src)
			checkErrors(t, file, src, err)
			if (job == nil) == (err == nil) {
				t.Fatalf("%s: job %v and error %v: want exactly one", file, job, err)
			}
			if job == nil {
				continue
			}
			if job.ID == "" || len(job.TaskGroups) == 0 {
				t.Fatalf("%s: a job without an ID or groups: %+v", file, job)
			}
			for _, tg := range job.TaskGroups {
				if len(tg.Tasks) == 0 || tg.Count < 0 {
					t.Fatalf("%s: group %q has no task or a negative count", file, tg.Name)
				}
				for _, task := range tg.Tasks {
					if task.Restart == nil || task.KillTimeout <= 0 {
						t.Fatalf("%s: task %q lacks its defaults", file, task.Name)
					}
				}
			}
		}
	})
}

func FuzzParseVolume(f *testing.F) {
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, file := range []string{"volume.hcl", "volume.json"} {
			vol, err := ParseVolume(file, src)
			checkErrors(t, file, src, err)
			if (vol == nil) == (err == nil) {
				t.Fatalf("%s: volume %v and error %v: want exactly one", file, vol, err)
			}
			if vol == nil {
				continue
			}
			if vol.ID == "" || vol.PluginID == "" || len(vol.RequestedCapabilities) == 0 ||
				vol.RequestedCapacityMin < 0 || vol.RequestedCapacityMax < 0 {
				t.Fatalf("%s: a volume without an ID, a plugin or a capability, or with a negative capacity: %+v", file, vol)
			}
		}
	})
}

func FuzzParseSize(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			if n != 0 || !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("ParseSize(%q) = %d, %q: an error quotes the size and returns 0", s, n, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d: negative", s, n)
		}
		// A size is decimal digits, a '.' at most and a unit: no sign,
		// and not 0x10, 1_000 or 1e3.
		num := strings.TrimRightFunc(strings.TrimSpace(s), unicode.IsLetter)
		num = strings.TrimRightFunc(num, unicode.IsSpace) // "1 GiB", "0\vB"
		if strings.Trim(num, "0123456789.") != "" || strings.Count(num, ".") > 1 {
			t.Fatalf("ParseSize(%q) = %d: not a decimal size", s, n)
		}
		if back, err := ParseSize(strconv.FormatInt(n, 10)); err != nil || back != n {
			t.Fatalf("ParseSize(%q) = %d, but %d reads back as %d, %v", s, n, n, back, err)
		}
	})
}

// FuzzDecodeConfig decodes into testConfig over defaultTestConfig. When
// the file decodes, what the schema requires is there, and what the file
// does not mention keeps its default.
func FuzzDecodeConfig(f *testing.F) {
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, file := range []string{"agent.hcl", "agent.json"} {
			cfg := defaultTestConfig()
			defPorts := cfg.Ports
			err := DecodeConfig(file, src, cfg)
			checkErrors(t, file, src, err)
			if err != nil {
				continue
			}
			// A key the file does not hold literally: HCL's names are
			// identifiers, but JSON's may be escaped ("n\u0061me").
			absent := func(key string) bool {
				return !bytes.Contains(src, []byte(key)) && (!isJSON(file, src) || !bytes.Contains(src, []byte(`\u`)))
			}
			for _, pl := range cfg.Plugins {
				// type and socket are required (no ",optional").
				if pl == nil || (pl.Type == "" && absent("type")) || (pl.Socket == "" && absent("socket")) {
					t.Fatalf("%s: a plugin without its required type or socket: %+v", file, pl)
				}
			}
			def := defaultTestConfig()
			switch {
			case !cfg.Dev:
				t.Fatalf("%s: the untagged field was changed", file)
			case absent("name") && cfg.Name != def.Name:
				t.Fatalf("%s: name is not in the file, but its default %q became %q", file, def.Name, cfg.Name)
			case absent("ports") && (cfg.Ports != defPorts || *cfg.Ports != *def.Ports):
				t.Fatalf("%s: ports is not in the file, but its default %+v became %+v", file, def.Ports, cfg.Ports)
			case cfg.Ports == nil:
				t.Fatalf("%s: the default ports block was dropped", file)
			case absent("http") && cfg.Ports.HTTP != def.Ports.HTTP, absent("rpc") && cfg.Ports.RPC != def.Ports.RPC:
				t.Fatalf("%s: a port is not in the file, but it lost its default: %+v", file, cfg.Ports)
			case cfg.Server == nil:
				t.Fatalf("%s: the default server block was dropped", file)
			case absent("bootstrap_expect") && cfg.Server.Expect != def.Server.Expect:
				t.Fatalf("%s: bootstrap_expect is not in the file, but its default %d became %d", file, def.Server.Expect, cfg.Server.Expect)
			case absent("plugin") && cfg.Plugins != nil, absent("hook") && cfg.Hooks != nil:
				t.Fatalf("%s: blocks the file does not have: %+v, %+v", file, cfg.Plugins, cfg.Hooks)
			}
		}
	})
}
