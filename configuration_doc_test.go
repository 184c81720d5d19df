package main

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/installtest"
)

// docs/configuration.md is the reference of driftback.yaml: one row per
// key of the config types, keyed by its path (targets[].pullRequest.draft),
// with the schema's default where the schema has one.

const configurationPage = "docs/configuration.md"

// configField is one key of the config file, as the types declare it.
type configField struct {
	Path    string
	Default string // the schema tag's default=, if any
}

// configFields walks t (a struct, or a pointer, slice or map of one) and
// lists every yaml-tagged field under prefix: a struct's fields by name, a
// list's entries as [], a map's values as <key>.
func configFields(t reflect.Type, prefix string) []configField {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return configFields(t.Elem(), prefix+"[]")
	case reflect.Map:
		return configFields(t.Elem(), prefix+".<key>")
	case reflect.Struct:
	default:
		return nil
	}
	var out []configField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		def := ""
		for _, kw := range strings.Split(f.Tag.Get("schema"), ";") {
			if v, ok := strings.CutPrefix(kw, "default="); ok {
				def = v
			}
		}
		out = append(out, configField{Path: p, Default: def})
		out = append(out, configFields(f.Type, p)...)
	}
	return out
}

// referenceProblems checks a configuration page's tables against the
// config types: every key has a row, every row is a key, and a row's
// default shows the schema's.
func referenceProblems(text string) []string {
	rows := map[string][]string{}
	var ps []string
	for _, r := range mdTable(text, "| field | type | default |") {
		if len(r) < 4 {
			ps = append(ps, fmt.Sprintf("row %q: want field, type, default and meaning", r))
			continue
		}
		if _, dup := rows[unquote(r[0])]; dup {
			ps = append(ps, fmt.Sprintf("%s has two rows", unquote(r[0])))
		}
		rows[unquote(r[0])] = r
	}
	fields := configFields(reflect.TypeFor[config.Config](), "")
	known := map[string]bool{}
	for _, f := range fields {
		known[f.Path] = true
		r, ok := rows[f.Path]
		switch {
		case !ok:
			ps = append(ps, fmt.Sprintf("%s has no row in %s", f.Path, configurationPage))
		case f.Default != "" && !strings.Contains(r[2], f.Default):
			ps = append(ps, fmt.Sprintf("%s: the row's default is %q; the schema's is %q", f.Path, r[2], f.Default))
		}
	}
	var extra []string
	for p := range rows {
		if !known[p] {
			extra = append(extra, p)
		}
	}
	slices.Sort(extra)
	for _, p := range extra {
		ps = append(ps, fmt.Sprintf("%s names %s, which is no config key", configurationPage, p))
	}
	return ps
}

func TestConfigurationReference(t *testing.T) {
	if n := len(configFields(reflect.TypeFor[config.Config](), "")); n < 60 {
		t.Fatalf("the walk found %d config keys; it missed some", n)
	}
	b, err := os.ReadFile(configurationPage)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range referenceProblems(string(b)) {
		t.Error(p)
	}
	// TestDocConfigBlocksValidate (commands/) validates the page's YAML
	// blocks it recognises as config; here none may go unrecognised.
	blocks, err := installtest.Blocks(configurationPage)
	if err != nil {
		t.Fatal(err)
	}
	configs := 0
	for _, blk := range blocks {
		if _, ok := installtest.ConfigBlock(blk); ok {
			configs++
		} else if blk.Lang == "yaml" {
			t.Errorf("%s: a YAML block that is not (part of) a config, so nothing validates it", blk)
		}
	}
	if configs < 2 {
		t.Errorf("%s shows %d configs, want a whole one and fragments", configurationPage, configs)
	}
}

// Each way the reference can drift from the types is caught.
func TestConfigurationReferenceCatchesMistakes(t *testing.T) {
	b, err := os.ReadFile(configurationPage)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	row := func(path string) string {
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "| `"+path+"` |") {
				return l + "\n"
			}
		}
		t.Fatalf("no row for %s; update this test", path)
		return ""
	}
	breaks := map[string][2]string{
		"a key without a row":   {row("targets[].appliedRevision.argocd.name"), ""},
		"a row of no key":       {row("listen"), row("listen") + "| `listenAddress` | host:port | — | x |\n"},
		"a nested list's key":   {row("defaults.ignore[].manager"), ""},
		"a default that is not": {"| `clusters[].qps` | integer | `20` |", "| `clusters[].qps` | integer | `5` |"},
	}
	for name, br := range breaks {
		if !strings.Contains(text, br[0]) {
			t.Fatalf("%s: the page no longer holds %q; update this test", name, br[0])
		}
		if len(referenceProblems(strings.Replace(text, br[0], br[1], 1))) == 0 {
			t.Errorf("%s: not caught", name)
		}
	}
}
