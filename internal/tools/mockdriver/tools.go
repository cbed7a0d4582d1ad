//go:build tools

// Package mockdriver pins the csi-test v4.2.0 mock CSI driver, a plugin
// nobody here wrote, which berth's client tests run as a real process. It is
// a module of its own so its 2020-era dependencies stay out of berth's
// go.mod. Build it with `make mock-driver` (into .tools/mock-driver); the
// csitest package builds it on demand.
package mockdriver

import _ "github.com/kubernetes-csi/csi-test/v4/cmd/mock-driver"
