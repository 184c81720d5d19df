package gitops

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// Flux substitutes ${var} into the built text. A value only a Secret holds
// renders as a marker; to find which fields a variable reaches, the
// variables are dyed with nonces and the dyed render read back.

// A marker stands in a render for a value driftback does not know: a
// value only a Secret holds (Flux), which driftback never reads, or a
// value of Argo CD's build environment it cannot tell. A field holding one
// is in sync when live fits the text around it, and cannot be written.
type marker struct {
	tag string
	re  *regexp.Regexp
}

func newMarker(tag string) marker {
	return marker{tag, regexp.MustCompile(tag + `-([_A-Za-z][_A-Za-z0-9]*)-` + tag)}
}

var (
	secretMarkers  = newMarker("ddsecret")
	unknownMarkers = newMarker("ddunknown")
)

func (m marker) of(name string) string { return m.tag + "-" + name + "-" + m.tag }

func (m marker) names(tmpl string) []string {
	var out []string
	for _, sm := range m.re.FindAllStringSubmatch(tmpl, -1) {
		out = append(out, sm[1])
	}
	return out
}

// fits reports whether s is tmpl with some text in place of each marker.
func (m marker) fits(tmpl, s string) bool {
	parts := m.re.Split(tmpl, -1)
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	re, err := regexp.Compile(`^(?s)` + strings.Join(parts, `.*`) + `$`)
	return err == nil && re.MatchString(s)
}

// secretMarker stands for a value only a Secret holds: driftback never
// reads it, so the field it reaches cannot be compared or written.
func secretMarker(name string) string { return secretMarkers.of(name) }

// HoldsSecret reports whether rendered text holds a Secret's variable.
func HoldsSecret(s string) bool { return secretMarkers.re.MatchString(s) }

// IsSecret reports whether rendered text is wholly one Secret's variable.
func IsSecret(s string) bool { return s != "" && secretMarkers.re.FindString(s) == s }

// SecretNames are the Secret variables rendered text holds, in order.
func SecretNames(tmpl string) []string { return secretMarkers.names(tmpl) }

// FitsSecrets reports whether s is tmpl with some text in place of each
// Secret marker.
func FitsSecrets(tmpl, s string) bool { return secretMarkers.fits(tmpl, s) }

// unknownMarker stands for a value of the GitOps tool's build that
// driftback cannot tell (ArgoUnknownMeaning says which).
func unknownMarker(name string) string { return unknownMarkers.of(name) }

// HoldsUnknown reports whether rendered text holds an unknown value.
func HoldsUnknown(s string) bool { return unknownMarkers.re.MatchString(s) }

// UnknownNames are the unknown values rendered text holds, in order.
func UnknownNames(tmpl string) []string { return unknownMarkers.names(tmpl) }

// FitsUnknown reports whether s is tmpl with some text in place of each
// unknown value.
func FitsUnknown(tmpl, s string) bool { return unknownMarkers.fits(tmpl, s) }

func varNonce(n int) string { return fmt.Sprintf("ddvar%04dddvar", n) }

var varNonceRE = regexp.MustCompile(`ddvar([0-9]{4})ddvar`)

// VarNonces gives each of the sorted names a nonce to render as: nonces
// by name, and the names by what a nonce holds (for VarsIn and Solve).
func VarNonces(names []string) (nonces, byNonce map[string]string) {
	nonces, byNonce = map[string]string{}, map[string]string{}
	for i, n := range names {
		nonces[n] = varNonce(i + 1)
		byNonce[fmt.Sprintf("%04d", i+1)] = n
	}
	return nonces, byNonce
}

// HoldsVar reports whether rendered text holds a dyed variable.
func HoldsVar(s string) bool { return varNonceRE.MatchString(s) }

// VarsIn are the variables dyed text holds, in order.
func VarsIn(tmpl string, byNonce map[string]string) []string {
	var out []string
	for _, m := range varNonceRE.FindAllStringSubmatch(tmpl, -1) {
		out = append(out, byNonce[m[1]])
	}
	return out
}

// VarList names the variables dyed text holds, for messages.
func VarList(tmpl string, byNonce map[string]string) string {
	var out []string
	for _, n := range VarsIn(tmpl, byNonce) {
		out = append(out, "${"+n+"}")
	}
	return strings.Join(out, ", ")
}

// Solve finds the variable values that make tmpl (text with nonces) read
// s. The answer must be the only one: matching the holes greedily and
// lazily must agree, and a variable used twice must take one value.
func Solve(tmpl, s string, byNonce map[string]string) (map[string]string, bool) {
	locs := varNonceRE.FindAllStringSubmatchIndex(tmpl, -1)
	var greedy, lazy strings.Builder
	var order []string
	last := 0
	for _, l := range locs {
		lit := regexp.QuoteMeta(tmpl[last:l[0]])
		greedy.WriteString(lit + "(.*)")
		lazy.WriteString(lit + "(.*?)")
		order = append(order, byNonce[tmpl[l[2]:l[3]]])
		last = l[1]
	}
	tail := regexp.QuoteMeta(tmpl[last:])
	var answers []map[string]string
	for _, pat := range []string{greedy.String(), lazy.String()} {
		re, err := regexp.Compile(`^(?s)` + pat + tail + `$`)
		if err != nil {
			return nil, false
		}
		m := re.FindStringSubmatch(s)
		if m == nil {
			return nil, false
		}
		got := map[string]string{}
		for i, n := range order {
			if prev, seen := got[n]; seen && prev != m[i+1] {
				return nil, false
			}
			got[n] = m[i+1]
		}
		answers = append(answers, got)
	}
	for n, v := range answers[0] {
		if answers[1][n] != v {
			return nil, false
		}
	}
	return answers[0], true
}

// ScalarText is a live scalar as substitution would have written it.
func ScalarText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case nil:
		return ""
	}
	return jsonvalue.Canonical(v)
}

// StringPaths lists the string fields of v that match, list elements
// named by their name where the list is named (and no name matches).
func StringPaths(v any, p jsonvalue.Path, match func(string) bool) []jsonvalue.Path {
	switch t := v.(type) {
	case string:
		if match(t) {
			return []jsonvalue.Path{p}
		}
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []jsonvalue.Path
		for _, k := range keys {
			out = append(out, StringPaths(t[k], p.Child(jsonvalue.Key(k)), match)...)
		}
		return out
	case []any:
		names, named := jsonvalue.ElementNames(t)
		for _, n := range names {
			named = named && !match(n)
		}
		var out []jsonvalue.Path
		for i, e := range t {
			step := jsonvalue.Index(i)
			if named {
				step = jsonvalue.Name(names[i])
			}
			out = append(out, StringPaths(e, p.Child(step), match)...)
		}
		return out
	}
	return nil
}

// VarValue is what one field asks of a variable substituted into it: the
// value the field's live text gives the variable, and whether that
// differs from the value it has.
type VarValue struct {
	Var, Value string
	Changed    bool
}

// VarField reads one field the variable-dyed render shows variables in
// (tmpl, its dyed text). A field whose live value equals the render asks
// each of its variables for the value it has; a drifted one is solved for
// their new values. false when the live value does not keep the text
// around them (or the field is gone).
func (f *Flux) VarField(tmpl string, rendered, live any, present bool, byNonce map[string]string) ([]VarValue, bool) {
	if present && jsonvalue.Equal(rendered, live) {
		var out []VarValue
		for _, n := range VarsIn(tmpl, byNonce) {
			out = append(out, VarValue{Var: n, Value: f.Vars[n]})
		}
		return out, true
	}
	got, ok := Solve(tmpl, ScalarText(live), byNonce)
	if !present || !ok {
		return nil, false
	}
	out := make([]VarValue, 0, len(got))
	for n, v := range got {
		out = append(out, VarValue{Var: n, Value: v, Changed: v != f.Vars[n]})
	}
	return out, true
}
