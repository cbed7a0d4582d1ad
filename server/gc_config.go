package server

import (
	"fmt"
	"time"
)

// validateGC names each garbage collection setting that is wrong, by its
// key in the agent's server { } block.
func (c *Config) validateGC() []error {
	var errs []error
	if c.GCInterval <= 0 {
		errs = append(errs, fmt.Errorf("server: gc_interval must be positive, got %s; the default is %s", c.GCInterval, DefaultGCInterval))
	}
	for _, th := range []struct {
		key string
		d   time.Duration
	}{
		{"alloc_gc_threshold", c.AllocGCThreshold},
		{"job_gc_threshold", c.JobGCThreshold},
		{"node_gc_threshold", c.NodeGCThreshold},
	} {
		if th.d < 0 {
			errs = append(errs, fmt.Errorf("server: %s must not be negative, got %s (0 collects at the first pass)", th.key, th.d))
		}
	}
	return errs
}
