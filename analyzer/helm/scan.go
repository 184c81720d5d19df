package helm

import (
	"path"
	"sort"
	"text/template/parse"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// nondeterministic are the template functions (Helm's and sprig's) whose
// result is not a function of the chart and the values: random text,
// keys and certificates, salted hashes, the clock, the cluster (lookup
// finds nothing without one, the live object with one) and DNS.
var nondeterministic = map[string]bool{
	"randAlphaNum": true, "randAlpha": true, "randNumeric": true, "randAscii": true,
	"randBytes": true, "randInt": true, "uuidv4": true, "shuffle": true,
	"now": true, "ago": true, "lookup": true, "getHostByName": true,
	"genCA": true, "genCAWithKey": true, "genPrivateKey": true,
	"genSelfSignedCert": true, "genSelfSignedCertWithKey": true,
	"genSignedCert": true, "genSignedCertWithKey": true,
	"htpasswd": true, "bcrypt": true, "encryptAES": true,
}

// templateFacts is what one parsed template (a file, or a define in it)
// reads and calls.
type templateFacts struct {
	values   []jsonvalue.Path // .Values.a.b read, as a.b
	tplArgs  []jsonvalue.Path // .Values paths passed to tpl
	funcs    map[string]bool  // functions called
	includes map[string]bool  // templates included or called by name
}

// chartTemplates parses every template of ch and its subcharts, by the
// name Helm gives it ("app/templates/x.yaml", "app/charts/db/templates/
// _helpers.tpl") and by define name. A template that does not parse is
// left out: the render reports it.
type chartTemplates struct {
	trees map[string]*templateFacts // file name or define name
	// prefixes are the values paths of the chart and of every subchart
	// (nil for the top chart, [db] for charts/db), where a .Values path
	// read in a template may land.
	prefixes []jsonvalue.Path
}

func scanChart(ch *chart.Chart) *chartTemplates {
	ct := &chartTemplates{trees: map[string]*templateFacts{}}
	var walk func(c *chart.Chart, full string, prefix jsonvalue.Path)
	walk = func(c *chart.Chart, full string, prefix jsonvalue.Path) {
		ct.prefixes = append(ct.prefixes, prefix)
		for _, t := range c.Templates {
			name := path.Join(full, t.Name)
			tr := parse.New(name)
			tr.Mode = parse.SkipFuncCheck
			trees := map[string]*parse.Tree{}
			if _, err := tr.Parse(string(t.Data), "", "", trees); err != nil {
				continue
			}
			for n, tr := range trees {
				ct.trees[n] = factsOf(tr)
			}
		}
		for _, d := range c.Dependencies() {
			walk(d, path.Join(full, "charts", d.Name()), prefix.Child(jsonvalue.Key(d.Name())))
		}
	}
	walk(ch, ch.Name(), nil)
	return ct
}

// reach gathers the facts of template name and of every template it
// includes, however deep.
func (ct *chartTemplates) reach(name string) *templateFacts {
	out := newFacts()
	seen := map[string]bool{}
	var visit func(n string)
	visit = func(n string) {
		if seen[n] {
			return
		}
		seen[n] = true
		f, ok := ct.trees[n]
		if !ok {
			return
		}
		out.values = append(out.values, f.values...)
		out.tplArgs = append(out.tplArgs, f.tplArgs...)
		for fn := range f.funcs {
			out.funcs[fn] = true
		}
		for inc := range f.includes {
			out.includes[inc] = true
			visit(inc)
		}
	}
	visit(name)
	return out
}

// nondeterministicFuncs lists the nondeterministic functions f calls.
func (f *templateFacts) nondeterministicFuncs() []string {
	var out []string
	for fn := range f.funcs {
		if nondeterministic[fn] {
			out = append(out, fn)
		}
	}
	sort.Strings(out)
	return out
}

func newFacts() *templateFacts {
	return &templateFacts{funcs: map[string]bool{}, includes: map[string]bool{}}
}

func factsOf(t *parse.Tree) *templateFacts {
	f := newFacts()
	if t.Root != nil {
		f.node(t.Root)
	}
	return f
}

func (f *templateFacts) node(n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			f.node(c)
		}
	case *parse.ActionNode:
		f.node(n.Pipe)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			f.node(c)
		}
	case *parse.CommandNode:
		if len(n.Args) > 0 {
			if id, ok := n.Args[0].(*parse.IdentifierNode); ok {
				f.funcs[id.Ident] = true
				if (id.Ident == "include" || id.Ident == "template") && len(n.Args) > 1 {
					if s, ok := n.Args[1].(*parse.StringNode); ok {
						f.includes[s.Text] = true
					}
				}
				if id.Ident == "tpl" && len(n.Args) > 1 {
					f.tplArgs = append(f.tplArgs, valuesPaths(n.Args[1])...)
				}
			}
		}
		for _, a := range n.Args {
			f.node(a)
		}
	case *parse.FieldNode:
		f.field(n.Ident)
	case *parse.VariableNode:
		if len(n.Ident) > 0 && n.Ident[0] == "$" {
			f.field(n.Ident[1:])
		}
	case *parse.ChainNode:
		f.node(n.Node)
	case *parse.IfNode:
		f.branch(&n.BranchNode)
	case *parse.RangeNode:
		f.branch(&n.BranchNode)
	case *parse.WithNode:
		f.branch(&n.BranchNode)
	case *parse.TemplateNode:
		f.includes[n.Name] = true
		f.node(n.Pipe)
	}
}

func (f *templateFacts) branch(b *parse.BranchNode) {
	f.node(b.Pipe)
	f.node(b.List)
	if b.ElseList != nil {
		f.node(b.ElseList)
	}
}

func (f *templateFacts) field(ident []string) {
	if len(ident) > 1 && ident[0] == "Values" {
		var p jsonvalue.Path
		for _, k := range ident[1:] {
			p = append(p, jsonvalue.Key(k))
		}
		f.values = append(f.values, p)
	}
}

// valuesPaths lists the .Values paths an argument reads, through a
// parenthesised pipeline (tpl (toYaml .Values.x) .).
func valuesPaths(n parse.Node) []jsonvalue.Path {
	g := newFacts()
	g.node(n)
	return g.values
}

// under reports whether values path p lies under path ref read by a
// template of any chart of the tree (a subchart reads its values under its
// name).
func (ct *chartTemplates) under(p jsonvalue.Path, refs []jsonvalue.Path) bool {
	for _, ref := range refs {
		for _, pf := range ct.prefixes {
			if p.HasPrefix(append(append(jsonvalue.Path(nil), pf...), ref...)) {
				return true
			}
		}
	}
	return false
}
