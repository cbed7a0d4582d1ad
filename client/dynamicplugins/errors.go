package dynamicplugins

import "errors"

// Sentinels, for errors.Is.
var (
	ErrInvalidPlugin  = errors.New("dynamicplugins: invalid plugin")
	ErrPluginNotFound = errors.New("dynamicplugins: plugin not registered")
	ErrPluginConflict = errors.New("dynamicplugins: plugin ID already registered from another source")
	ErrAllocMismatch  = errors.New("dynamicplugins: plugin is registered by another allocation")
)
