package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Defaults for the flags.
const (
	defaultName = "hostpath.berth.dev"
	defaultRoot = "/var/lib/berth-hostpath"
)

// Config is everything the plugin is told on its command line.
type Config struct {
	Endpoint      string            // socket path, already stripped of unix://
	Root          string            // directory holding volumes, snapshots and the state file
	NodeID        string            // NodeGetInfo node_id
	Name          string            // GetPluginInfo name
	MaxVolumes    int64             // NodeGetInfo max_volumes_per_node; 0 = unlimited
	Topology      map[string]string // accessible topology segments; empty = none
	LogLevel      string
	DisableAttach bool // drop PUBLISH_UNPUBLISH_VOLUME
	DisableStage  bool // drop STAGE_UNSTAGE_VOLUME
}

// DefaultConfig is the configuration before flags: the endpoint from
// CSI_ENDPOINT and the node ID from the host name.
func DefaultConfig(getenv func(string) string) Config {
	host, _ := os.Hostname()
	return Config{
		Endpoint: getenv("CSI_ENDPOINT"),
		Root:     defaultRoot,
		NodeID:   host,
		Name:     defaultName,
		LogLevel: "info",
	}
}

// Validate checks the configuration and normalises the endpoint to an
// absolute socket path.
func (c *Config) Validate() error {
	path, err := parseEndpoint(c.Endpoint)
	if err != nil {
		return err
	}
	c.Endpoint = path
	if c.Root == "" {
		return errors.New("-root is required")
	}
	if c.Root, err = filepath.Abs(c.Root); err != nil {
		return fmt.Errorf("-root %q: %w", c.Root, err)
	}
	if c.NodeID == "" {
		return errors.New("-node-id is required (the host name is empty)")
	}
	if len(c.NodeID) > 128 {
		return fmt.Errorf("-node-id %q is longer than 128 bytes", c.NodeID)
	}
	if !pluginName.MatchString(c.Name) {
		return fmt.Errorf("-name %q is not a valid CSI plugin name (domain notation, at most 63 characters)", c.Name)
	}
	if c.MaxVolumes < 0 {
		return fmt.Errorf("-max-volumes %d is negative", c.MaxVolumes)
	}
	if hclog.LevelFromString(c.LogLevel) == hclog.NoLevel {
		return fmt.Errorf("-log-level %q is not one of trace, debug, info, warn, error", c.LogLevel)
	}
	return nil
}

// pluginName is the rule csi-sanity applies to GetPluginInfo.name.
var pluginName = regexp.MustCompile(`^[a-zA-Z][A-Za-z0-9-._]{0,61}[a-zA-Z]$`)

// parseEndpoint accepts unix:///abs/path.sock, unix:path and a bare path,
// and returns an absolute path. CSI allows UNIX sockets only.
func parseEndpoint(ep string) (string, error) {
	if ep == "" {
		return "", errors.New("no endpoint: set -endpoint or CSI_ENDPOINT")
	}
	path := ep
	if scheme, rest, ok := strings.Cut(ep, "://"); ok {
		if scheme != "unix" {
			return "", fmt.Errorf("endpoint %q: only unix sockets are supported", ep)
		}
		path = rest
	} else if rest, ok := strings.CutPrefix(ep, "unix:"); ok {
		path = rest
	}
	if path == "" {
		return "", fmt.Errorf("endpoint %q has no path", ep)
	}
	return filepath.Abs(path)
}

// Topology keys and values follow the rules of csi.proto's Topology.
var (
	topoName   = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	topoPrefix = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$`)
)

// parseTopology reads "key=value,key=value".
func parseTopology(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]string{}
	seen := map[string]string{}
	prefix := ""
	for i, pair := range strings.Split(s, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return nil, fmt.Errorf("-topology %q: %q is not key=value", s, pair)
		}
		p, name, hasPrefix := strings.Cut(key, "/")
		if !hasPrefix {
			p, name = "", key
		}
		if !topoName.MatchString(name) || (hasPrefix && !topoPrefix.MatchString(p)) {
			return nil, fmt.Errorf("-topology: %q is not a valid topology key", key)
		}
		if i > 0 && p != prefix {
			return nil, fmt.Errorf("-topology: key %q: every key must have the same prefix", key)
		}
		prefix = p
		if !topoName.MatchString(value) {
			return nil, fmt.Errorf("-topology: %q is not a valid value for %q", value, key)
		}
		if prev, dup := seen[strings.ToLower(key)]; dup {
			return nil, fmt.Errorf("-topology: keys %q and %q collide (keys are case-insensitive)", prev, key)
		}
		seen[strings.ToLower(key)] = key
		out[key] = value
	}
	return out, nil
}

// formatTopology is the inverse of parseTopology, keys sorted.
func formatTopology(t map[string]string) string {
	pairs := make([]string, 0, len(t))
	for k, v := range t {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// parseFlags fills a Config from args. It returns flag.ErrHelp for -h and
// errShowVersion for -version.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	cfg := DefaultConfig(getenv)
	fs := flag.NewFlagSet("berth-hostpath", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var topology string
	var showVersion bool
	fs.StringVar(&cfg.Endpoint, "endpoint", cfg.Endpoint, "CSI socket: unix:///abs/path.sock or a path (default $CSI_ENDPOINT)")
	fs.StringVar(&cfg.Root, "root", cfg.Root, "directory for volumes, snapshots and the state file")
	fs.StringVar(&cfg.NodeID, "node-id", cfg.NodeID, "node ID reported by NodeGetInfo; the only node ControllerPublishVolume accepts")
	fs.StringVar(&cfg.Name, "name", cfg.Name, "plugin name reported by GetPluginInfo")
	fs.Int64Var(&cfg.MaxVolumes, "max-volumes", 0, "max_volumes_per_node reported by NodeGetInfo and enforced by ControllerPublishVolume (0 = unlimited)")
	fs.StringVar(&topology, "topology", "", "accessible topology of this node, key=value,... (enables VOLUME_ACCESSIBILITY_CONSTRAINTS)")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "trace, debug, info, warn or error")
	fs.BoolVar(&cfg.DisableAttach, "disable-attach", false, "do not offer ControllerPublishVolume/ControllerUnpublishVolume")
	fs.BoolVar(&cfg.DisableStage, "disable-stage", false, "do not offer NodeStageVolume/NodeUnstageVolume; NodePublishVolume mounts the volume directory")
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if showVersion {
		return cfg, errShowVersion
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	t, err := parseTopology(topology)
	if err != nil {
		return cfg, err
	}
	cfg.Topology = t
	return cfg, cfg.Validate()
}

var errShowVersion = errors.New("version requested")
