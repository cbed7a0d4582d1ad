package spec

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-csi/berth/api"
)

// Purpose is what a volume spec is for. Register and create accept the
// same fields but differ in which they require or refuse.
type Purpose int

const (
	// ForAny checks only what every spec needs, whatever it is for.
	ForAny Purpose = iota
	// ForRegister is for "berth volume register": the volume exists, so
	// external_id is required.
	ForRegister
	// ForCreate is for "berth volume create": the plugin makes the volume
	// and its ID, so external_id is refused.
	ForCreate
)

// ParseVolumeFile reads and parses the volume spec at path.
func ParseVolumeFile(path string) (*api.VolumeSpec, error) {
	return ParseVolumeFileFor(path, ForAny)
}

// ParseVolumeFileFor reads and parses the volume spec at path and checks it
// for purpose.
func ParseVolumeFileFor(path string, purpose Purpose) (*api.VolumeSpec, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read volume spec: %w; check the file's path", err)
	}
	return ParseVolumeFor(path, src, purpose)
}

// ParseVolume parses a volume spec: JSON when filename ends in .json or the
// text starts with '{', HCL otherwise. filename only names the file in
// errors. The error, if any, is one *Error or several joined, each naming
// the file, the line and the field. It checks what every spec needs;
// ParseVolumeFor also checks what register or create needs.
func ParseVolume(filename string, src []byte) (*api.VolumeSpec, error) {
	return ParseVolumeFor(filename, src, ForAny)
}

// ParseVolumeFor is ParseVolume that also checks the spec for purpose,
// reporting those problems with the others.
func ParseVolumeFor(filename string, src []byte, purpose Purpose) (*api.VolumeSpec, error) {
	p := &parser{file: filename, noun: "volume"}
	if len(bytes.TrimSpace(src)) == 0 {
		p.errorf(1, "", "the volume spec is empty; it needs at least id, type, plugin_id and a capability block")
		return nil, joinErrors(p.errs)
	}
	root, fromJSON := p.read(src)
	pascal := fromJSON && isPascal(root)
	if pascal {
		pascalToSpec(root)
	}
	if root == nil || len(p.errs) > 0 {
		return nil, joinErrors(p.errs)
	}
	vol := p.volume(root, pascal, purpose)
	if err := joinErrors(p.errs); err != nil {
		return nil, err
	}
	return vol, nil
}

// parser collects the problems of one file.
type parser struct {
	file   string
	errs   []*Error
	pascal bool   // reading the API's JSON form, whose durations are nanoseconds
	noun   string // what the file describes: "volume" or "job"
}

// read reads src into the tree: JSON when the file's name ends in .json or
// its text starts with '{', HCL otherwise; fromJSON says which. A JSON
// file must hold one object. root is nil when src cannot be read, the
// problems recorded.
func (p *parser) read(src []byte) (root *node, fromJSON bool) {
	if !isJSON(p.file, src) {
		return p.readHCL(src), false
	}
	root = p.readJSON(src)
	if root != nil && root.kind != kindObject {
		p.errorf(root.line, "", "the JSON must be one object holding the %s, not %s", p.noun, root.describe())
		return nil, true
	}
	return root, true
}

// isJSON reports whether a file is JSON: by its name's .json, or by the
// '{' its text starts with.
func isJSON(filename string, src []byte) bool {
	trimmed := bytes.TrimSpace(src)
	return strings.EqualFold(filepath.Ext(filename), ".json") || (len(trimmed) > 0 && trimmed[0] == '{')
}

// errorf records a problem; msg should name the field.
func (p *parser) errorf(line int, field, format string, args ...any) {
	if line < 1 {
		line = 1
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}
