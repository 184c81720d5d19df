package dye

import (
	"regexp"
	"testing"
)

func TestParseImage(t *testing.T) {
	cases := map[string]ImageRef{
		"app":                                   {Name: "app"},
		"app:v1":                                {Name: "app", Tag: "v1"},
		"localhost:5000/app":                    {Name: "localhost:5000/app"},
		"localhost:5000/app:1.0":                {Name: "localhost:5000/app", Tag: "1.0"},
		"ghcr.io/org/app@sha256:abc":            {Name: "ghcr.io/org/app", Digest: "sha256:abc"},
		"ghcr.io/org/app:1.2@sha256:abc":        {Name: "ghcr.io/org/app", Tag: "1.2", Digest: "sha256:abc"},
		"registry:443/a/b/c:tag-1.0_x@sha256:d": {Name: "registry:443/a/b/c", Tag: "tag-1.0_x", Digest: "sha256:d"},
	}
	for in, want := range cases {
		got := ParseImage(in)
		if got != want {
			t.Errorf("ParseImage(%q) = %+v, want %+v", in, got, want)
		}
		if got.String() != in {
			t.Errorf("String() = %q, want %q", got.String(), in)
		}
	}
}

func FuzzParseImage(f *testing.F) {
	for _, s := range []string{"app", "a:1", "h:5000/a:1@sha256:x", "::@@", "/:/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := ParseImage(s)
		// A reference with an empty tag or digest after its separator
		// ("app:") has no canonical spelling; every other one round-trips.
		if r.String() == s {
			if again := ParseImage(s); again != r {
				t.Fatalf("%q parses two ways: %+v, %+v", s, r, again)
			}
		}
	})
}

// TestPatternMayMatchNeverRulesOutAMatch holds PatternMayMatch to
// kustomize's own pattern over every short pattern and name of a small
// alphabet (including '.', which matches any character) and image
// references that follow the name with a tag, a digest or both.
func TestPatternMayMatchNeverRulesOutAMatch(t *testing.T) {
	var words func(alphabet string, n int) []string
	words = func(alphabet string, n int) []string {
		if n == 0 {
			return []string{""}
		}
		out := []string{""}
		for _, w := range words(alphabet, n-1) {
			for _, c := range alphabet {
				out = append(out, w+string(c))
			}
		}
		return out
	}
	suffixes := []string{"", ":v1", ":a", ":.", "@sha256:ab", ":b@sha256:ab"}
	ruledOut := 0
	for _, pat := range words("ab.-", 5) {
		if pat == "" {
			continue
		}
		re := regexp.MustCompile("^" + pat + `(:[a-zA-Z0-9_.{}-]*)?(@[a-zA-Z0-9]+([.+_-][a-zA-Z0-9]+)*:[a-zA-Z0-9_.{}-]*)?$`)
		for _, name := range words("ab-é", 3) {
			if name == "" || PatternMayMatch(pat, name) {
				continue
			}
			ruledOut++
			for _, s := range suffixes {
				if re.MatchString(name + s) {
					t.Fatalf("%q matches %q, yet PatternMayMatch ruled it out", pat, name+s)
				}
			}
		}
	}
	if ruledOut == 0 {
		t.Fatal("nothing was ruled out")
	}
}

// TestPatternMayMatch: an entry name is ruled out only where kustomize's
// ^name(:tag)?(@digest)?$ provably cannot match the image name.
func TestPatternMayMatch(t *testing.T) {
	for _, c := range []struct {
		pat, name string
		want      bool
	}{
		{"registry.example.com/t1/app-00", "registry.example.com/t1/app-00", true},
		{"registry.example.com/t1/app-00", "registry.example.com/t1/app-01", false},
		{"registry.example.com/t1/app", "registry.example.com/t1/app-01", false}, // '-' cannot start a tag
		{"app", "app", true},
		{"ap.", "app", true}, // '.' is any character (measured)
		{"ap.", "apx", true},
		{"app.v1", "app", true},             // runs on into ":v1"
		{"reg", "reg:5000/app", true},       // ':' after it could start a tag
		{"nginx", "docker.io/nginx", false}, // anchored at the start
		{"app-.*", "app-x", true},           // a regular expression: cannot tell
		{"app|web", "web", true},
		{"[", "x", true},
		{"xpp", "app", false},
		{"registry.example.com/platform/agent", "registry.example.com/t1/app-01", false}, // longer, differs within the name
		{"appv1", "app", false}, // longer, but 'v' cannot match the ':' or '@' after the name
		{"apx.v", "app", false}, // the name differs before the pattern runs on
		{"caf.", "café", true},  // '.' is one character, two bytes here
		{"x..v1", "xé", true},
	} {
		if got := PatternMayMatch(c.pat, c.name); got != c.want {
			t.Errorf("PatternMayMatch(%q, %q) = %v, want %v", c.pat, c.name, got, c.want)
		}
		// Never rule out what kustomize's own pattern matches.
		if !c.want {
			for _, img := range []string{c.name, c.name + ":v1", c.name + "@sha256:abc", c.name + ":v1@sha256:abc"} {
				if re := regexp.MustCompile("^" + c.pat + `(:[a-zA-Z0-9_.{}-]*)?(@[a-zA-Z0-9]+([.+_-][a-zA-Z0-9]+)*:[a-zA-Z0-9_.{}-]*)?$`); re.MatchString(img) {
					t.Errorf("%q matches %q, yet PatternMayMatch ruled it out", c.pat, img)
				}
			}
		}
	}
}
