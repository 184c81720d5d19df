package analyzer

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Codes and Routes are what the docs check their lists against, so each
// must hold every constant of plan.go with its prefix, read from the
// source: a constant added without an entry fails here, before a page can
// miss it.
func TestConstantListsAreWhole(t *testing.T) {
	f, err := goparser.ParseFile(token.NewFileSet(), "plan.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for prefix, list := range map[string][]string{"Code": Codes, "Route": Routes} {
		var declared []string
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, prefix) || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s is not a string literal", name.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					declared = append(declared, v)
				}
			}
		}
		if len(declared) < 5 {
			t.Fatalf("found %d %s constants in plan.go; the parse missed them", len(declared), prefix)
		}
		if !slices.Equal(declared, list) {
			t.Errorf("the %s list = %q\nplan.go declares %q (same order)", prefix, list, declared)
		}
	}
}
