package agent

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/berth-csi/berth/server"
)

// gcDurations are the server block's garbage collection settings, parsed
// (zero: the server's default).
type gcDurations struct {
	interval, alloc, job, node time.Duration
}

// checkGC parses the server block's garbage collection durations, naming
// the key of each that is wrong and what to write instead.
func (c *Config) checkGC() error {
	s := c.Server
	var errs []error
	parse := func(key, v string, positive bool) time.Duration {
		v = strings.TrimSpace(v)
		if v == "" {
			return 0
		}
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf(`server.%s = %q is not a duration; write a number with a unit, such as "30s", "5m", "1h" or "24h"`, key, v))
		case positive && d <= 0:
			errs = append(errs, fmt.Errorf(`server.%s = %q must be positive, such as "5m"`, key, v))
		case d < 0:
			errs = append(errs, fmt.Errorf(`server.%s = %q must not be negative; "0s" collects at the first pass`, key, v))
		}
		return d
	}
	s.gc = gcDurations{
		interval: parse("gc_interval", s.GCInterval, true),
		alloc:    parse("alloc_gc_threshold", s.AllocGCThreshold, false),
		job:      parse("job_gc_threshold", s.JobGCThreshold, false),
		node:     parse("node_gc_threshold", s.NodeGCThreshold, false),
	}
	return errors.Join(errs...)
}

// applyGC carries the garbage collection settings the file sets into the
// server's config; the others keep the server's defaults.
func (s *ServerConfig) applyGC(scfg *server.Config) {
	if s.GCInterval != "" {
		scfg.GCInterval = s.gc.interval
	}
	if s.AllocGCThreshold != "" {
		scfg.AllocGCThreshold = s.gc.alloc
	}
	if s.JobGCThreshold != "" {
		scfg.JobGCThreshold = s.gc.job
	}
	if s.NodeGCThreshold != "" {
		scfg.NodeGCThreshold = s.gc.node
	}
}
