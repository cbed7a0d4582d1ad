package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"reflect"
	"regexp"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
)

// DecodeConfigFile reads the config file at path and decodes it into v;
// see DecodeConfig.
func DecodeConfigFile(path string, v any) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read config file: %w; check the file's path", err)
	}
	return DecodeConfig(path, src, v)
}

// DecodeConfig decodes a config file, such as the agent's, into v, a
// pointer to a struct tagged for gohcl, with gohcl.DecodeBody: what the
// file leaves out keeps the value v holds, so v may carry the defaults (a
// block fills the struct a pointer already holds). A struct gohcl cannot
// decode into makes it panic, as gohcl does.
//
// The file is HCL, or HCL's JSON form by a .json name or a leading '{'.
// The error, if any, is one *Error or several joined, each naming the
// file and the line, in HCL's words (which name the argument meant when
// one is misspelt); the specs' hints are added to them. Any other error
// means v is not a pointer to a struct.
func DecodeConfig(filename string, src []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("spec: DecodeConfig needs a pointer to a struct, not %T", v)
	}
	p := &parser{file: filename}
	var (
		file  *hcl.File
		diags hcl.Diagnostics
	)
	if isJSON(filename, src) {
		file, diags = hcljson.Parse(src, filename)
		if !diags.HasErrors() {
			p.refuseCostlyJSON(src)
		}
	} else {
		file, diags = hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
		if !diags.HasErrors() {
			p.refuseCostlyHCL(file.Body.(*hclsyntax.Body))
		}
	}
	if !diags.HasErrors() && len(p.errs) == 0 {
		diags = gohcl.DecodeBody(file.Body, nil, v)
	}
	p.diags(tidy(diags), "")
	return joinErrors(p.errs)
}

// tooBig is the problem with a number beyond float64's range.
const tooBig = "the number is too large or too small; no field takes one beyond 1e308 or below 1e-308"

// refuseCostlyHCL records, before gohcl evaluates anything, what it
// would take minutes or gigabytes over, and no config needs: a for
// expression (each level can multiply a value's size) and a number beyond
// float64's range (1e-1000000 took six minutes to write out as a string).
func (p *parser) refuseCostlyHCL(body *hclsyntax.Body) {
	lastFor := 0 // one error for nested for expressions
	hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		switch e := n.(type) {
		case *hclsyntax.ForExpr:
			if line := e.Range().Start.Line; line != lastFor {
				lastFor = line
				p.errorf(line, "", "for expressions are not allowed in a config file")
			}
		case *hclsyntax.LiteralValueExpr:
			if e.Val.Type() == cty.Number && e.Val.IsKnown() && !e.Val.IsNull() {
				if _, ok := numberText(e.Val.AsBigFloat()); !ok {
					p.errorf(e.Range().Start.Line, "", tooBig)
				}
			}
		}
		return nil
	})
}

// refuseCostlyJSON is refuseCostlyHCL for JSON, which has numbers but no
// expressions; it reports the first number beyond float64's range. src
// is valid JSON.
func (p *parser) refuseCostlyJSON(src []byte) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return
		}
		n, ok := tok.(json.Number)
		if !ok {
			continue
		}
		inRange := false
		if f, _, err := big.ParseFloat(n.String(), 10, 512, big.ToNearestEven); err == nil {
			_, inRange = numberText(f)
		}
		if !inRange {
			p.errorf(bytes.Count(src[:dec.InputOffset()], []byte("\n"))+1, "", tooBig)
			return
		}
	}
}

var (
	// didYouMean is the name HCL suggests for an unknown argument.
	didYouMean = regexp.MustCompile(`Did you mean "([^"]+)"\?`)
	// missingArg is the argument of HCL's "Missing required argument".
	missingArg = regexp.MustCompile(`^The argument "([^"]+)" is required`)
)

// tidy leaves out what HCL says twice about one problem, so that each is
// reported once, as in the specs: the "Missing required argument" of an
// argument that HCL took a misspelt one for ("sockt" is not also a missing
// "socket"; anywhere in the file, as HCL does not say which block a
// diagnostic is about), and gohcl's "Unsuitable value type" where an
// earlier error is (a variable that is not allowed is not also a value
// that is not known). The file is refused either way.
func tidy(diags hcl.Diagnostics) hcl.Diagnostics {
	guessed := map[string]bool{}
	for _, d := range diags {
		if m := didYouMean.FindStringSubmatch(d.Detail); m != nil {
			guessed[m[1]] = true
		}
	}
	errAt := map[hcl.Pos]bool{}
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		if m := missingArg.FindStringSubmatch(d.Detail); m != nil && d.Summary == "Missing required argument" && guessed[m[1]] {
			continue
		}
		if d.Subject != nil {
			if d.Summary == "Unsuitable value type" && errAt[d.Subject.Start] {
				continue
			}
			errAt[d.Subject.Start] = true
		}
		out = append(out, d)
	}
	return out
}
