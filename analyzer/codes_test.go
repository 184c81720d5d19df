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

// Codes is what the docs check their refusal sections against, so it must
// hold every Code* constant of plan.go, read from the source: a constant
// added without an entry in Codes fails here, before a page can miss it.
func TestCodesListsEveryConstant(t *testing.T) {
	f, err := goparser.ParseFile(token.NewFileSet(), "plan.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
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
	if len(declared) < 10 {
		t.Fatalf("found %d Code constants in plan.go; the parse missed them", len(declared))
	}
	if !slices.Equal(declared, Codes) {
		t.Errorf("Codes = %q\nplan.go declares %q (same order)", Codes, declared)
	}
}
