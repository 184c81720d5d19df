package helm

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/strvals"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// Layer is one user-supplied values source, in the order the tool merges
// it: a later layer wins over an earlier one. Values is what the layer
// alone sets (for a path set by strvals, the tree that path builds).
type Layer struct {
	// Source names the layer as the user wrote it: "ConfigMap/app-values
	// [values.yaml]", "spec.values", "valueFiles[0] values-prod.yaml",
	// "parameters[image.tag]".
	Source string
	Values map[string]any
}

// ValuesReference is one entry of a Flux HelmRelease's spec.valuesFrom.
type ValuesReference struct {
	Kind       string // ConfigMap or Secret
	Name       string
	ValuesKey  string // empty means values.yaml
	TargetPath string // set the key's whole text at this path (strvals)
	Optional   bool
	Literal    bool // with TargetPath: the text is one string, never parsed
}

func (r ValuesReference) key() string {
	if r.ValuesKey == "" {
		return "values.yaml"
	}
	return r.ValuesKey
}

// ValuesData is what the caller read of the HelmRelease's namespace: each
// ConfigMap's data and each Secret's (decoded) data, by name. A name
// missing from its map is an object that does not exist.
type ValuesData struct {
	ConfigMaps map[string]map[string]string
	Secrets    map[string]map[string][]byte
}

// FluxValues merges a HelmRelease's values as helm-controller does
// (fluxcd/pkg/chartutil ChartValuesFromReferences): each valuesFrom entry
// in order, a whole document merged over what came before or, with a
// targetPath, one value set at that path by Helm's strvals (a quoted text
// as a string, Literal always as a string); then spec.values last. A
// missing object or key is an error unless the entry is optional. The
// chart's own values.yaml is not part of the result: Helm coalesces it
// under the result when it renders, and the result is what the release
// records as its config (and what ConfigDigest digests).
//
// helm-controller merges spec.values in before it sets a targetPath, into
// maps it shares with spec.values, so a targetPath wins over spec.values
// and over later documents (its test "target path precedence over all").
// The merge here does the same on a copy. The layers follow that
// precedence: documents, then spec.values, then targetPaths. The one
// exception, which the layers do not show: where an earlier document and
// spec.values both hold the map around the path, the merged map is new,
// and spec.values' own value at the path wins.
func FluxValues(inline map[string]any, refs []ValuesReference, data ValuesData) (map[string]any, []Layer, error) {
	given := inline
	inline, _ = jsonvalue.Copy(inline).(map[string]any)
	result := map[string]any{}
	var docs, targets []Layer
	for _, ref := range refs {
		src := ref.Kind + "/" + ref.Name + "[" + ref.key() + "]"
		var text []byte
		var found, exists bool
		switch ref.Kind {
		case "ConfigMap":
			var cm map[string]string
			if cm, exists = data.ConfigMaps[ref.Name]; exists {
				var s string
				s, found = cm[ref.key()]
				text = []byte(s)
			}
		case "Secret":
			var sec map[string][]byte
			if sec, exists = data.Secrets[ref.Name]; exists {
				text, found = sec[ref.key()]
			}
		default:
			return nil, nil, fmt.Errorf("valuesFrom %s: unsupported kind %q", src, ref.Kind)
		}
		if !found {
			if ref.Optional {
				continue
			}
			what := "not found"
			if exists {
				what = "has no key " + ref.key()
			}
			return nil, nil, fmt.Errorf("valuesFrom %s: %s %s %s", src, ref.Kind, ref.Name, what)
		}
		if ref.TargetPath != "" {
			result = loader.MergeMaps(result, inline)
			if err := setPath(result, ref.TargetPath, string(text), ref.Literal); err != nil {
				return nil, nil, fmt.Errorf("valuesFrom %s: targetPath %s: %w", src, ref.TargetPath, err)
			}
			alone := map[string]any{}
			if err := setPath(alone, ref.TargetPath, string(text), ref.Literal); err != nil {
				return nil, nil, err
			}
			targets = append(targets, Layer{Source: src + " at " + ref.TargetPath, Values: alone})
			continue
		}
		vals, err := common.ReadValues(text)
		if err != nil {
			return nil, nil, fmt.Errorf("valuesFrom %s: %w", src, err)
		}
		result = loader.MergeMaps(result, vals)
		docs = append(docs, Layer{Source: src, Values: vals})
	}
	layers := docs
	if len(given) > 0 {
		layers = append(layers, Layer{Source: "spec.values", Values: given})
	}
	layers = append(layers, targets...)
	return loader.MergeMaps(result, inline), layers, nil
}

// setPath sets one valuesFrom text at path as helm-controller does: a
// text in single or double quotes is set, without them, as a string; any
// other text is typed by strvals (true, 3, null); Literal sets the text
// as a string with strvals' special characters escaped.
func setPath(into map[string]any, path, text string, literal bool) error {
	if literal {
		esc := strings.NewReplacer(`\`, `\\`, `,`, `\,`, `[`, `\[`, `]`, `\]`, `{`, `\{`, `}`, `\}`)
		return strvals.ParseIntoString(path+"="+esc.Replace(text), into)
	}
	quoted := func(q string) bool { return strings.HasPrefix(text, q) && strings.HasSuffix(text, q) }
	if quoted(`"`) || quoted(`'`) {
		return strvals.ParseIntoString(path+"="+strings.Trim(text, `"'`), into)
	}
	return strvals.ParseInto(path+"="+text, into)
}

// ArgoParameter is one entry of an Argo CD Application's
// spec.source.helm.parameters.
type ArgoParameter struct {
	Name, Value string
	ForceString bool
}

// ArgoFileParameter is one entry of spec.source.helm.fileParameters; the
// caller reads the file.
type ArgoFileParameter struct {
	Name string
	Path string
}

// ArgoHelm is an Argo CD Application's spec.source.helm, with each value
// file and file parameter already resolved by the caller (relative to the
// chart folder, or another source's $ref) and environment variables
// ($ARGOCD_APP_NAME...) already substituted in parameter values.
type ArgoHelm struct {
	ValueFiles              []string
	IgnoreMissingValueFiles bool
	Values                  string
	ValuesObject            map[string]any
	Parameters              []ArgoParameter
	FileParameters          []ArgoFileParameter
}

// ArgoValues merges an Application's values as the repo-server's `helm
// template` command line does: each value file in order (--values), then
// valuesObject or, when it is unset, values (one more --values file: the
// two never merge, valuesObject replaces values), then the parameters
// (--set, and after all of them --set-string for forceString), then the
// file parameters (--set-file). files holds the text of each value file
// and file parameter by the path the Application names.
//
// The repo-server keeps parameters in a map by name, so a later parameter
// of the same name wins and the order of --set flags is the map's; here
// they are applied sorted by name, which gives the same values whenever no
// parameter's path lies inside another's.
func ArgoValues(h ArgoHelm, files map[string][]byte) (map[string]any, []Layer, error) {
	result := map[string]any{}
	var layers []Layer
	for i, f := range h.ValueFiles {
		b, ok := files[f]
		if !ok {
			if h.IgnoreMissingValueFiles {
				continue
			}
			return nil, nil, fmt.Errorf("valueFiles[%d] %s: not found", i, f)
		}
		vals, err := loader.LoadValues(bytes.NewReader(b))
		if err != nil {
			return nil, nil, fmt.Errorf("valueFiles[%d] %s: %w", i, f, err)
		}
		result = loader.MergeMaps(result, vals)
		layers = append(layers, Layer{Source: valueFileSource(i, f), Values: vals})
	}
	inline, src := []byte(h.Values), "values"
	if h.ValuesObject != nil {
		inline, src = nil, "valuesObject"
		layers = append(layers, Layer{Source: src, Values: h.ValuesObject})
		result = loader.MergeMaps(result, h.ValuesObject)
	}
	if len(inline) > 0 {
		vals, err := loader.LoadValues(bytes.NewReader(inline))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", src, err)
		}
		result = loader.MergeMaps(result, vals)
		layers = append(layers, Layer{Source: src, Values: vals})
	}
	last := map[string]ArgoParameter{}
	for _, p := range h.Parameters {
		last[p.Name] = p
	}
	names := make([]string, 0, len(last))
	for n := range last {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, forced := range []bool{false, true} {
		for _, n := range names {
			p := last[n]
			if p.ForceString != forced {
				continue
			}
			parse := strvals.ParseInto
			if forced {
				parse = strvals.ParseIntoString
			}
			set := p.Name + "=" + escapeSetValue(p.Value)
			alone := map[string]any{}
			if err := parse(set, result); err != nil {
				return nil, nil, fmt.Errorf("parameters[%s]: %w", p.Name, err)
			}
			if err := parse(set, alone); err != nil {
				return nil, nil, err
			}
			layers = append(layers, Layer{Source: "parameters[" + p.Name + "]", Values: alone})
		}
	}
	for _, p := range h.FileParameters {
		b, ok := files[p.Path]
		if !ok {
			return nil, nil, fmt.Errorf("fileParameters[%s] %s: not found", p.Name, p.Path)
		}
		read := func([]rune) (any, error) { return string(b), nil }
		set := p.Name + "=" + escapeSetValue(p.Path)
		alone := map[string]any{}
		if err := strvals.ParseIntoFile(set, result, read); err != nil {
			return nil, nil, fmt.Errorf("fileParameters[%s]: %w", p.Name, err)
		}
		if err := strvals.ParseIntoFile(set, alone, read); err != nil {
			return nil, nil, err
		}
		layers = append(layers, Layer{Source: "fileParameters[" + p.Name + "] " + p.Path, Values: alone})
	}
	return result, layers, nil
}

// escapeSetValue escapes the commas of a --set value as the repo-server
// does (a comma already escaped stays; a value in braces is Helm's list
// syntax and is left whole).
func escapeSetValue(v string) string {
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
		return v
	}
	var b strings.Builder
	var prev rune
	for _, r := range v {
		if r == ',' && prev != '\\' {
			b.WriteString(`\,`)
		} else {
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}
