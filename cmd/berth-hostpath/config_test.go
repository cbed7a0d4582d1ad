package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"
)

func TestParseEndpoint(t *testing.T) {
	wd, err := os.Getwd()
	must.NoError(t, err)
	cases := []struct {
		in, want, err string
	}{
		{in: "unix:///run/csi/csi.sock", want: "/run/csi/csi.sock"},
		{in: "unix:/run/csi.sock", want: "/run/csi.sock"},
		{in: "/run/csi.sock", want: "/run/csi.sock"},
		{in: "csi.sock", want: filepath.Join(wd, "csi.sock")},
		{in: "unix://relative.sock", want: filepath.Join(wd, "relative.sock")},
		{in: "", err: "no endpoint: set -endpoint or CSI_ENDPOINT"},
		{in: "tcp://127.0.0.1:9000", err: "only unix sockets"},
		{in: "unix://", err: "has no path"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseEndpoint(tc.in)
			if tc.err != "" {
				must.ErrorContains(t, err, tc.err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
		})
	}
}

func TestParseTopology(t *testing.T) {
	cases := []struct {
		in   string
		want map[string]string
		err  string
	}{
		{in: "", want: nil},
		{in: "zone=a", want: map[string]string{"zone": "a"}},
		{in: "example.com/zone=a, example.com/rack=r-1", want: map[string]string{"example.com/zone": "a", "example.com/rack": "r-1"}},
		{in: "zone", err: "is not key=value"},
		{in: "zone=", err: "is not a valid value"},
		{in: "-zone=a", err: "not a valid topology key"},
		{in: "Example.com/zone=a", err: "not a valid topology key"},
		{in: "a.com/zone=a,b.com/rack=r", err: "same prefix"},
		{in: "zone=a,Zone=b", err: "case-insensitive"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseTopology(tc.in)
			if tc.err != "" {
				must.ErrorContains(t, err, tc.err)
				return
			}
			must.NoError(t, err)
			must.Eq(t, tc.want, got)
			if tc.want != nil {
				again, err := parseTopology(formatTopology(got))
				must.NoError(t, err)
				must.Eq(t, got, again)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"CSI_ENDPOINT": "unix:///run/env.sock"}[k]
	}
	host, _ := os.Hostname()

	t.Run("defaults", func(t *testing.T) {
		cfg, err := parseFlags(nil, env, &bytes.Buffer{})
		must.NoError(t, err)
		must.Eq(t, Config{Endpoint: "/run/env.sock", Root: defaultRoot, NodeID: host, Name: defaultName, LogLevel: "info"}, cfg)
	})
	t.Run("every flag", func(t *testing.T) {
		cfg, err := parseFlags([]string{"-endpoint", "/tmp/x.sock", "-root", "/srv/hp", "-node-id", "n1", "-name", "hostpath.example.com",
			"-max-volumes", "4", "-topology", "zone=a", "-log-level", "debug", "-disable-attach", "-disable-stage"}, env, &bytes.Buffer{})
		must.NoError(t, err)
		must.Eq(t, Config{Endpoint: "/tmp/x.sock", Root: "/srv/hp", NodeID: "n1", Name: "hostpath.example.com", MaxVolumes: 4,
			Topology: map[string]string{"zone": "a"}, LogLevel: "debug", DisableAttach: true, DisableStage: true}, cfg)
	})
	bad := []struct {
		args []string
		err  string
	}{
		{[]string{"-name", "not a name"}, "not a valid CSI plugin name"},
		{[]string{"-max-volumes", "-1"}, "-max-volumes -1 is negative"},
		{[]string{"-log-level", "loud"}, `-log-level "loud"`},
		{[]string{"-node-id", ""}, "-node-id is required"},
		{[]string{"-topology", "x"}, "not key=value"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-endpoint", "tcp://h:1"}, "only unix sockets"},
	}
	for _, tc := range bad {
		t.Run(tc.err, func(t *testing.T) {
			_, err := parseFlags(tc.args, env, &bytes.Buffer{})
			must.ErrorContains(t, err, tc.err)
		})
	}
}

func TestRun_ExitCodes(t *testing.T) {
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	must.Eq(t, 0, run(ctx, []string{"-version"}, os.Getenv, &stdout, &stderr))
	must.Eq(t, "berth-hostpath v"+version+"\n", stdout.String())

	stderr.Reset()
	must.Eq(t, 2, run(ctx, []string{"-max-volumes", "x"}, os.Getenv, &stdout, &stderr))
	must.StrContains(t, stderr.String(), "-max-volumes")

	stderr.Reset()
	must.Eq(t, 0, run(ctx, []string{"-h"}, os.Getenv, &stdout, &stderr))
	must.StrContains(t, stderr.String(), "-disable-attach")

	// a root that cannot be created
	file := filepath.Join(t.TempDir(), "file")
	must.NoError(t, os.WriteFile(file, nil, 0o600))
	stderr.Reset()
	must.Eq(t, 1, run(ctx, []string{"-endpoint", filepath.Join(t.TempDir(), "s.sock"), "-root", filepath.Join(file, "root")},
		os.Getenv, &stdout, &stderr))
	must.StrContains(t, stderr.String(), "cannot start")
}
