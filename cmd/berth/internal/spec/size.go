package spec

import (
	"fmt"
	"math/big"
	"strings"
)

// sizeUnits are the units a size may carry: KB is 1000 bytes, KiB 1024.
var sizeUnits = []struct {
	name string
	mult int64
}{
	{"B", 1},
	{"KB", 1e3}, {"KiB", 1 << 10},
	{"MB", 1e6}, {"MiB", 1 << 20},
	{"GB", 1e9}, {"GiB", 1 << 30},
	{"TB", 1e12}, {"TiB", 1 << 40},
}

// validUnits lists the unit names for error messages.
func validUnits() string {
	names := make([]string, len(sizeUnits))
	for i, u := range sizeUnits {
		names[i] = u.name
	}
	return strings.Join(names, ", ")
}

// ParseSize reads a byte count: a plain number of bytes ("1073741824") or a
// number and a unit ("1GiB", "500 MB", "1.5TiB"); units are B, KB, KiB, MB,
// MiB, GB, GiB, TB, TiB, in any letter case. The result must be a whole
// number of bytes.
func ParseSize(s string) (int64, error) {
	trimmed := strings.TrimSpace(s)
	num := strings.TrimRightFunc(trimmed, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' })
	unit := strings.TrimSpace(trimmed[len(num):])
	num = strings.TrimSpace(num)
	notSize := fmt.Errorf("%q is not a size; use a number of bytes or a number with a unit: %s (e.g. \"10GiB\")", s, validUnits())
	mult := int64(1)
	if unit != "" {
		found := false
		for _, u := range sizeUnits {
			if strings.EqualFold(unit, u.name) {
				mult, found = u.mult, true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("%q has an unknown unit %q; use one of %s (e.g. \"10GiB\")", s, unit, validUnits())
		}
	}
	// big.Rat reads decimals exactly ("1.1KB" is 1100 bytes, not
	// 1100.0000000000002), but also fractions, exponents, "0x10", "1_000"
	// and "0x1p4", which a size should not be.
	digits, negative := strings.CutPrefix(num, "-")
	if !isDecimal(digits) {
		return 0, notSize
	}
	if negative { // "-0" too: a size has no sign
		return 0, fmt.Errorf("%q is negative; a size is 0 or more bytes", s)
	}
	r, ok := new(big.Rat).SetString(digits)
	if !ok {
		return 0, notSize
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	if !r.Num().IsInt64() {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return r.Num().Int64(), nil
}

// isDecimal reports whether s is digits with at most one '.' among them.
func isDecimal(s string) bool {
	digits, dots := 0, 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}
