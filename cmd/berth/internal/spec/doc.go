// Package spec parses the files people write to describe berth objects:
// for now volume specs (berth volume register / create), in HCL or JSON,
// into api.VolumeSpec.
//
// Both syntaxes are first read into one small tree of values with their
// line numbers (tree.go), then one decoder walks the tree (volume.go), so
// HCL and JSON accept the same fields and report the same errors. Every
// error names the file, the line and the field, suggests the field meant
// when a name is misspelt, and lists the valid values when a value is not
// one of them.
//
// ParseVolume checks what every spec needs; ParseVolumeFor also checks
// what its purpose needs (register requires external_id, create refuses
// it), reporting those problems with the others.
//
// Imports: api, structs (for the mode names), hcl/v2 and go-cty only.
// Parsing never contacts a server; it checks the spec's shape and values,
// not whether the plugin or the volume exist.
//
// Concurrency: the functions are pure and safe to call concurrently.
package spec
