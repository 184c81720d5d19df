package yamledit

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/driftback/driftback/internal/jsonvalue"
)

const deployment = `# Deployment for the web app
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # the name
  labels:
    app: web

    tier: "frontend"
spec:
  replicas: 3   # scaled by HPA
  template:
    spec:
      # containers run in this order
      containers:
        - name: web
          image: 'nginx:1.25'
          ports:
            - containerPort: 80
        - name: sidecar # logs
          image: busybox
          args: [sh, -c, "echo hi"]
      volumes: []
images:
  - name: web
    newTag: "1.5.0" # pinned
`

var corpus = map[string]string{
	"deployment": deployment,
	"comments": `# head
a: 1 # line a
# between
b:
  # head of c
  c: x   # line c
  # foot of b
# foot
`,
	"quoting": `a: "double"
b: 'single ''quoted'''
c: plain text
d: "esc \" \n \u00e9"
e: ''
f: ""
g: ~
h: null
i:
j: 0x1F
k: 1.0
l: .inf
m: yes
n: 2001-12-14
o: !!str 42
`,
	"flow":      "a: {b: 1, c: [x, 'y', \"z\"]}\nd: [ {name: p, v: 1}, {name: q} ]\ne: {}\nf: []\n",
	"block":     "a: |\n  line1\n   line2\n\nb: >-\n  folded\n  text\nc: |+\n  keep\n\nd: after\n",
	"crlf":      "a: 1\r\nb:\r\n  c: \"x\"\r\n  d:\r\n    - e\r\n",
	"bom":       "\ufeffa: 1\nb: x\n",
	"nonl":      "a: 1\nb:\n  c: x",
	"indent4":   "a:\n    b:\n        c: 1\n    d:\n        - e\n        - f\n",
	"seqflat":   "a:\n- b\n- c:\n    d: 1\n  e: 2\n",
	"multidoc":  "# leading\n---\na: 1\n...\n---\n# doc 2\nb: 2\n---\nc: [3]\n",
	"nested":    "a:\n  - - x\n    - y\n  - - z\n",
	"multiline": "a: this is\n  a plain\n  scalar\nb: \"quoted\n  across\"\nc: ok\n",
	"emptydoc":  "---\n# nothing\n---\na: 1\n",
	"keys":      "1: one\ntrue: t\n\"quoted key\": v\n~: n\n",
	"tabs":      "a:\tx\nb: \"t\\tb\"\n",
}

func mustParse(t *testing.T, src string) *File {
	t.Helper()
	f, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

func TestNoopCorpus(t *testing.T) {
	for name, src := range corpus {
		t.Run(name, func(t *testing.T) {
			f := mustParse(t, src)
			for i := 0; i < f.Len(); i++ {
				if err := f.Safe(i); err != nil {
					t.Fatalf("doc %d not safe: %v", i, err)
				}
				v, err := f.Value(i)
				if err != nil {
					t.Fatalf("Value(%d): %v", i, err)
				}
				if err := f.Set(i, v); err != nil {
					t.Fatalf("Set(%d): %v", i, err)
				}
				// A deep copy forces the comparison, not pointer identity.
				c, _ := jsonvalue.Copy(v).(map[string]any)
				if v == nil {
					c = nil
				}
				if err := f.Set(i, c); err != nil {
					t.Fatalf("Set(%d) copy: %v", i, err)
				}
			}
			if got := string(f.Bytes()); got != src {
				t.Fatalf("no-op Set changed bytes:\n%q\nwant\n%q", got, src)
			}
		})
	}
}

// set parses src, applies fn to a copy of document i and returns the bytes.
func set(t *testing.T, src string, i int, fn func(v map[string]any)) string {
	t.Helper()
	f := mustParse(t, src)
	v, err := f.Value(i)
	if err != nil {
		t.Fatal(err)
	}
	v, _ = jsonvalue.Copy(v).(map[string]any)
	fn(v)
	if err := f.Set(i, v); err != nil {
		t.Fatalf("Set: %v", err)
	}
	got, err := f.Value(i)
	if err != nil || !jsonvalue.Equal(got, v) {
		t.Fatalf("after Set, Value = %v (%v), want %v", got, err, v)
	}
	return string(f.Bytes())
}

func at(v any, p string) map[string]any {
	for _, k := range strings.Split(p, ".") {
		v = v.(map[string]any)[k]
	}
	return v.(map[string]any)
}

func list(v any, p string) []any {
	parts := strings.Split(p, ".")
	m := at(v, strings.Join(parts[:len(parts)-1], "."))
	if len(parts) == 1 {
		m = v.(map[string]any)
	}
	return m[parts[len(parts)-1]].([]any)
}

func named(l []any, name string) map[string]any {
	for _, e := range l {
		if m := e.(map[string]any); m["name"] == name {
			return m
		}
	}
	return nil
}

func check(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s\n(got %q)", got, want, got)
	}
}

func TestScalarChangeKeepsCommentAndQuotes(t *testing.T) {
	got := set(t, deployment, 0, func(v map[string]any) {
		named(v["images"].([]any), "web")["newTag"] = "2.0.0"
	})
	check(t, got, strings.Replace(deployment, `newTag: "1.5.0" # pinned`, `newTag: "2.0.0" # pinned`, 1))

	got = set(t, deployment, 0, func(v map[string]any) {
		at(v, "spec")["replicas"] = 5
		named(list(v, "spec.template.spec.containers"), "web")["image"] = "nginx:1.26"
	})
	want := strings.Replace(deployment, "replicas: 3   #", "replicas: 5   #", 1)
	want = strings.Replace(want, "image: 'nginx:1.25'", "image: 'nginx:1.26'", 1)
	check(t, got, want)
}

func TestMultiDocument(t *testing.T) {
	src := "# first\na: 1 # c\n---\n# second\nb:\n  c: 2\n...\n---\nd: \"x\"\n"
	got := set(t, src, 1, func(v map[string]any) {
		at(v, "b")["c"] = 3
		at(v, "b")["e"] = "new"
	})
	check(t, got, "# first\na: 1 # c\n---\n# second\nb:\n  c: 3\n  e: new\n...\n---\nd: \"x\"\n")
}

func TestMapAddRemove(t *testing.T) {
	got := set(t, deployment, 0, func(v map[string]any) {
		at(v, "metadata.labels")["zone"] = "eu"
		at(v, "metadata.labels")["env"] = "prod"
		delete(at(v, "metadata.labels"), "tier")
		delete(at(v, "metadata"), "name")
	})
	want := strings.Replace(deployment, "  name: web # the name\n", "", 1)
	want = strings.Replace(want, "    app: web\n\n    tier: \"frontend\"\n", "    app: web\n\n    env: prod\n    zone: eu\n", 1)
	check(t, got, want)

	// Emptying a nested map leaves "{}".
	got = set(t, "a:\n  b: 1 # x\n  c: 2\nd: 3\n", 0, func(v map[string]any) {
		v["a"] = map[string]any{}
	})
	check(t, got, "a: {}\nd: 3\n")

	// A new nested map uses the file's step and sequence style.
	got = set(t, corpus["indent4"], 0, func(v map[string]any) {
		at(v, "a")["n"] = map[string]any{"x": []any{"p", map[string]any{"name": "q", "k": true}}}
	})
	check(t, got, corpus["indent4"]+"    n:\n        x:\n            - p\n            - name: q\n              k: true\n")
	got = set(t, corpus["seqflat"], 0, func(v map[string]any) {
		v["z"] = map[string]any{"l": []any{"1", 2}}
	})
	check(t, got, corpus["seqflat"]+"z:\n  l:\n  - \"1\"\n  - 2\n")
}

func TestNamedList(t *testing.T) {
	// Add a container and remove another.
	got := set(t, deployment, 0, func(v map[string]any) {
		spec := at(v, "spec.template.spec")
		l := spec["containers"].([]any)
		spec["containers"] = []any{l[0], map[string]any{"name": "proxy", "image": "envoy:1", "args": []any{"-v"}}}
	})
	want := strings.Replace(deployment, `        - name: sidecar # logs
          image: busybox
          args: [sh, -c, "echo hi"]
`, `        - name: proxy
          args:
            - -v
          image: envoy:1
`, 1)
	check(t, got, want)

	// Remove the first element (its head comment goes with it).
	src := "items:\n  # about a\n  - name: a\n    v: 1\n  - name: b\n    v: 2\n"
	got = set(t, src, 0, func(v map[string]any) {
		v["items"] = v["items"].([]any)[1:]
	})
	check(t, got, "items:\n  - name: b\n    v: 2\n")

	// File order differs from alphabetical: pair by name, edit in place.
	src = "c:\n- name: zeta\n  v: 1\n- name: alpha\n  v: 2 # two\n- name: mid\n  v: 3\n"
	got = set(t, src, 0, func(v map[string]any) {
		named(v["c"].([]any), "alpha")["v"] = 20
	})
	check(t, got, strings.Replace(src, "v: 2 # two", "v: 20 # two", 1))

	// A prepended element (as a strategic-merge patch adds them) goes
	// before the first survivor, above its head comment.
	got = set(t, "l:\n  # first\n  - name: a\n  - name: b\n", 0, func(v map[string]any) {
		v["l"] = append([]any{map[string]any{"name": "new"}}, v["l"].([]any)...)
	})
	check(t, got, "l:\n  - name: new\n  # first\n  - name: a\n  - name: b\n")

	// Reordering is not spliced: the list is written anew.
	got = set(t, src, 0, func(v map[string]any) {
		l := v["c"].([]any)
		v["c"] = []any{l[1], l[0], l[2]}
	})
	check(t, got, "c:\n- name: alpha\n  v: 2\n- name: zeta\n  v: 1\n- name: mid\n  v: 3\n")

	// Removing an element whose first key shares the dash line.
	src = "l:\n  - name: a\n    x: 1\n  - name: b\n"
	got = set(t, src, 0, func(v map[string]any) {
		delete(v["l"].([]any)[0].(map[string]any), "name")
	})
	check(t, got, "l:\n  - x: 1\n  - name: b\n")
}

func TestTypeSensitiveQuoting(t *testing.T) {
	for _, s := range []string{"true", "1.0", "", "a: b", "null", "~", "0x1F", "yes", "x #y", "-1", "[a]"} {
		got := set(t, "k: plain # c\n", 0, func(v map[string]any) { v["k"] = s })
		f := mustParse(t, got)
		v, _ := f.Value(0)
		if v["k"] != s || !strings.HasSuffix(got, " # c\n") {
			t.Errorf("%q: wrote %q", s, got)
		}
	}
	check(t, set(t, "port: \"80\"\n", 0, func(v map[string]any) { v["port"] = 80 }), "port: 80\n")
	check(t, set(t, "port: 80\n", 0, func(v map[string]any) { v["port"] = "8080" }), "port: \"8080\"\n")
	check(t, set(t, "a: 'x'\n", 0, func(v map[string]any) { v["a"] = "it's" }), "a: 'it''s'\n")
	check(t, set(t, "a: x\n", 0, func(v map[string]any) { v["a"] = 1.5 }), "a: 1.5\n")
	check(t, set(t, "a: x\nb: 1\n", 0, func(v map[string]any) { v["a"] = "l1\nl2\n" }), "a: |\n  l1\n  l2\nb: 1\n")
	check(t, set(t, "a: |\n    old\n    text\nb: 1\n", 0, func(v map[string]any) { v["a"] = "new\ntext\n" }), "a: |\n    new\n    text\nb: 1\n")
	check(t, set(t, "a: [x, y]\n", 0, func(v map[string]any) { v["a"] = []any{"x", "a,b"} }), "a: [x, \"a,b\"]\n")
}

func TestReshape(t *testing.T) {
	check(t, set(t, "a: 1 # c\nb: 2\n", 0, func(v map[string]any) { v["a"] = map[string]any{"x": 1} }), "a: # c\n  x: 1\nb: 2\n")
	check(t, set(t, "a:\n  x: 1\nb: 2\n", 0, func(v map[string]any) { v["a"] = "s" }), "a: s\nb: 2\n")
	check(t, set(t, "a:\nb: 2\n", 0, func(v map[string]any) { v["a"] = []any{"x"} }), "a:\n  - x\nb: 2\n")
	check(t, set(t, "a: {}\n", 0, func(v map[string]any) { v["a"] = map[string]any{"k": "v"} }), "a:\n  k: v\n")
	check(t, set(t, "a: {x: 1, y: 2}\n", 0, func(v map[string]any) {
		delete(at(v, "a"), "x")
		at(v, "a")["z"] = 3
	}), "a: {y: 2, z: 3}\n")
	check(t, set(t, "a:\n  - 1\n  - 2\n", 0, func(v map[string]any) { v["a"] = []any{1, 2, 3} }), "a:\n  - 1\n  - 2\n  - 3\n")
	check(t, set(t, "a: 1\r\nb: 2\r\n", 0, func(v map[string]any) { v["c"] = map[string]any{"d": 1} }), "a: 1\r\nb: 2\r\nc:\r\n  d: 1\r\n")
	check(t, set(t, "a: 1", 0, func(v map[string]any) { v["b"] = 2 }), "a: 1\nb: 2")
	check(t, set(t, "\ufeffa: 1\n", 0, func(v map[string]any) { v["a"] = 2 }), "\ufeffa: 2\n")
	check(t, set(t, "---\n# empty\n", 0, func(v map[string]any) { v["a"] = 1 }), "---\n# empty\na: 1\n")
}

func TestSafeRefuses(t *testing.T) {
	cases := []struct {
		src, msg string
		line     int
	}{
		{"a: 1\nb: &x 2\nc: *x\n", "anchor", 2},
		{"base: {a: 1}\nd:\n  <<: {b: 2}\n", "merge", 3},
		{"a: 1\nb: 2\na: 3\n", "duplicate", 3},
		{"a: 1\nb: !secret x\n", "custom tag", 2},
		{"a:\n  - !!python/object x\n", "custom tag", 2},
		{"a: 1\n? explicit\n: value\n", "explicit key", 2},
	}
	for _, c := range cases {
		f := mustParse(t, c.src)
		err := f.Safe(0)
		var ye *Error
		if !errors.As(err, &ye) || ye.Line != c.line || !strings.Contains(ye.Msg, c.msg) {
			t.Errorf("%q: Safe = %v, want %s at line %d", c.src, err, c.msg, c.line)
			continue
		}
		if err := f.Set(0, map[string]any{"z": 1}); err == nil {
			t.Errorf("%q: Set on unsafe doc succeeded", c.src)
		}
		if string(f.Bytes()) != c.src {
			t.Errorf("%q: bytes changed", c.src)
		}
	}
	f := mustParse(t, "a: !!str 1\nb: !!binary aGk=\n")
	if err := f.Safe(0); err != nil {
		t.Errorf("standard tags refused: %v", err)
	}
}

func TestMalformed(t *testing.T) {
	cases := []struct {
		src  string
		line int
	}{
		{"a: 1\nb: [unclosed\nc: 2\n", 0},
		{"a: 1\n  b: 2\n", 2},
		{"a: 1\nb: \"x\n", 0},
		{"ok: 1\n\xff\xfe: 2\n", 2},
		{"\xff\xfea\x00", 1},
		{"a:\n\tb: 1\n", 2},
	}
	for _, c := range cases {
		_, err := Parse("bad.yaml", []byte(c.src))
		var ye *Error
		if !errors.As(err, &ye) || ye.File != "bad.yaml" {
			t.Errorf("%q: err = %v", c.src, err)
			continue
		}
		if c.line > 0 && ye.Line != c.line {
			t.Errorf("%q: line %d, want %d (%v)", c.src, ye.Line, c.line, err)
		}
		if !strings.HasPrefix(err.Error(), "bad.yaml:") {
			t.Errorf("%q: message %q", c.src, err)
		}
	}
}

func TestLine(t *testing.T) {
	f := mustParse(t, deployment)
	p := func(s ...jsonvalue.Step) jsonvalue.Path { return jsonvalue.Path(s) }
	containers := p(jsonvalue.Key("spec"), jsonvalue.Key("template"), jsonvalue.Key("spec"), jsonvalue.Key("containers"))
	cases := []struct {
		path jsonvalue.Path
		line int
	}{
		{p(jsonvalue.Key("kind")), 3},
		{p(jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("tier")), 9},
		{containers.Child(jsonvalue.Name("web")).Child(jsonvalue.Key("image")), 17},
		{containers.Child(jsonvalue.Name("sidecar")), 20},
		{containers.Child(jsonvalue.Index(1)).Child(jsonvalue.Key("args")).Child(jsonvalue.Index(2)), 22},
		{containers.Child(jsonvalue.Name("nope")), 0},
		{p(jsonvalue.Key("images"), jsonvalue.Name("web"), jsonvalue.Key("newTag")), 26},
	}
	for _, c := range cases {
		if got := f.Line(0, c.path); got != c.line {
			t.Errorf("Line(%s) = %d, want %d", c.path, got, c.line)
		}
	}
	v, _ := f.Value(0)
	delete(at(v, "metadata"), "name")
	if err := f.Set(0, v); err != nil {
		t.Fatal(err)
	}
	if got := f.Line(0, containers.Child(jsonvalue.Name("web")).Child(jsonvalue.Key("image"))); got != 16 {
		t.Errorf("after edit: line %d, want 16", got)
	}
}

// An alias inside the anchor it names would expand forever: Decode says so
// at the first repeat, not after a recursion as deep as its node budget
// (which took seconds and a deep stack).
func TestDecodeSelfAlias(t *testing.T) {
	for _, text := range []string{
		"a: &n {k: *n}\n",
		"a: &n [x, *n]\n",
		"a: &n\n  b:\n    c: *n\n",
		"a: &n\n  <<: *n\n",
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(text), &n); err != nil {
			continue // the parser refused it already
		}
		if _, err := Decode(&n); err == nil || !strings.Contains(err.Error(), "contains it") {
			t.Errorf("%q: %v", text, err)
		}
	}
	// The same anchor used twice side by side is no recursion.
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("a: &n {k: v}\nb: *n\nc: [*n, *n]\n"), &n); err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(&n); err != nil {
		t.Fatal(err)
	}
}
