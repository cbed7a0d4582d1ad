package pluginmanager

import (
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/client/dynamicplugins"
)

// Defaults for Config's zero values.
const (
	DefaultProbeInterval = 2 * time.Second
	DefaultProbeTimeout  = 2 * time.Second
)

// Config configures a Manager.
type Config struct {
	Logger        hclog.Logger
	Registry      *dynamicplugins.Registry // required: the plugins to fingerprint
	ProbeInterval time.Duration            // between probes of a healthy plugin; DefaultProbeInterval if zero
	ProbeTimeout  time.Duration            // per plugin call; DefaultProbeTimeout if zero
	OnUpdate      func(Update)             // called on every change; may be nil
	Now           func() time.Time         // the clock for UpdateTime and event times; time.Now if nil
}

// DefaultConfig returns a Config with every default set; the caller adds
// the registry and the callback.
func DefaultConfig() Config {
	return Config{
		Logger:        hclog.NewNullLogger(),
		ProbeInterval: DefaultProbeInterval,
		ProbeTimeout:  DefaultProbeTimeout,
		OnUpdate:      func(Update) {},
		Now:           time.Now,
	}
}

// Validate names every wrong field.
func (c *Config) Validate() error {
	var errs []error
	if c.Registry == nil {
		errs = append(errs, errors.New("pluginmanager: a plugin registry is required"))
	}
	if c.ProbeInterval < 0 {
		errs = append(errs, errors.New("pluginmanager: the probe interval must not be negative"))
	}
	if c.ProbeTimeout < 0 {
		errs = append(errs, errors.New("pluginmanager: the probe timeout must not be negative"))
	}
	return errors.Join(errs...)
}

// withDefaults fills zero values from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = d.ProbeInterval
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = d.ProbeTimeout
	}
	if c.OnUpdate == nil {
		c.OnUpdate = d.OnUpdate
	}
	if c.Now == nil {
		c.Now = d.Now
	}
	return c
}
