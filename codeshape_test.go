package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The shape rule (docs/ARCHITECTURE.md): a reader can hold any one file or
// function of the product in their head. Limits on product code (test
// files and generated code aside):
const (
	maxFileLines    = 600 // lines of one source file
	maxFuncLines    = 100 // lines of one function, signature to closing brace
	maxFuncBranches = 30  // cyclomatic complexity of one function
	maxFacadeFiles  = 15  // source files of the analyzer's root package
	maxBotRootFiles = 8   // source files of bot/'s root, which only sequences its rooms
)

// shapeAllowed lists what may exceed the limits, with the reason. Only
// generated code belongs here.
var shapeAllowed = map[string]string{}

var generatedHeader = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// productFiles walks the module for its product Go files: no tests, no
// testdata, no nested modules (tools built for tests), no generated code.
func productFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == "." {
				return nil
			}
			name := d.Name()
			if strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if generatedHeader.Match(data) {
			return nil
		}
		files = append(files, filepath.ToSlash(p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("found %d product files; the walk is wrong and the test would prove nothing", len(files))
	}
	sort.Strings(files)
	return files
}

// complexity is the cyclomatic complexity as gocyclo counts it: one, plus
// one per if, for, range, non-default case and && or ||.
func complexity(fn ast.Node) int {
	n := 1
	ast.Inspect(fn, func(x ast.Node) bool {
		switch x := x.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	var b bytes.Buffer
	typ := fd.Recv.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	switch r := typ.(type) {
	case *ast.Ident:
		b.WriteString(r.Name)
	case *ast.IndexExpr:
		fmt.Fprint(&b, r.X)
	case *ast.IndexListExpr:
		fmt.Fprint(&b, r.X)
	}
	return b.String() + "." + fd.Name.Name
}

// shapeViolations measures every product file against the limits.
func shapeViolations(t *testing.T) []string {
	var out []string
	facade, botRoot := 0, 0
	fset := token.NewFileSet()
	for _, p := range productFiles(t) {
		switch filepath.Dir(p) {
		case "analyzer":
			facade++
		case "bot":
			botRoot++
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if n := fset.Position(f.End()).Line; n > maxFileLines {
			out = append(out, fmt.Sprintf("%s: %d lines (limit %d)", p, n, maxFileLines))
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			name := p + ":" + funcName(fd)
			lines := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if lines > maxFuncLines {
				out = append(out, fmt.Sprintf("%s: %d lines (limit %d)", name, lines, maxFuncLines))
			}
			if c := complexity(fd); c > maxFuncBranches {
				out = append(out, fmt.Sprintf("%s: complexity %d (limit %d)", name, c, maxFuncBranches))
			}
		}
	}
	if facade > maxFacadeFiles {
		out = append(out, fmt.Sprintf("analyzer: %d source files in the façade package (limit %d)", facade, maxFacadeFiles))
	}
	if botRoot > maxBotRootFiles {
		out = append(out, fmt.Sprintf("bot: %d source files in the root package (limit %d)", botRoot, maxBotRootFiles))
	}
	if botRoot == 0 {
		out = append(out, "bot: no source files found in the root package; the walk is wrong")
	}
	return out
}

func TestCodeShape(t *testing.T) {
	for _, v := range shapeViolations(t) {
		what, _, _ := strings.Cut(v, ": ")
		if _, ok := shapeAllowed[what]; ok {
			continue
		}
		t.Error(v)
	}
}

// The measure itself must catch what it is for.
func TestCodeShapeMeasures(t *testing.T) {
	src := "package p\nfunc f(a, b bool) {\n\tif a && b {\n\t}\n\tfor {\n\t\tswitch {\n\t\tcase a:\n\t\tdefault:\n\t\t}\n\t}\n}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := complexity(f.Decls[0]); c != 5 {
		t.Errorf("complexity %d, want 5 (1 + if + && + for + one case)", c)
	}
}
