package commands

import (
	"encoding/json"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// What the binary says of itself: -ldflags first, then the toolchain's
// build info, each missing piece on its own.
func TestReadBuild(t *testing.T) {
	placeholders := Binary{Version: "dev", Commit: "unknown", Date: "unknown"}
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	const rev = "c72919cabcde0123456789abcdef0123456789ab"
	clone := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/driftback/driftback", Version: "v0.0.0-20261206051219-c72919cabcde+dirty"},
		Settings: vcs("-buildmode", "exe", "vcs", "git", "vcs.revision", rev, "vcs.time", "2026-12-06T05:12:19Z", "vcs.modified", "true")}
	cases := []struct {
		name string
		bin  Binary
		info *debug.BuildInfo
		want build
		line string
	}{
		{"no build info", placeholders, nil,
			build{Version: "dev", Commit: "unknown", Date: "unknown", GoVersion: runtime.Version()},
			"driftback dev (commit unknown, built unknown)"},
		{"go build -buildvcs=false", Binary{}, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("-buildmode", "exe")},
			build{Version: "dev", Commit: "unknown", Date: "unknown", GoVersion: "go1.26.8"},
			"driftback dev (commit unknown, built unknown)"},
		{"go build in a clone with changes", placeholders, clone,
			build{Version: "v0.0.0-20261206051219-c72919cabcde+dirty", Commit: rev, Date: "2026-12-06T05:12:19Z", GoVersion: "go1.26.8", Modified: true},
			"driftback v0.0.0-20261206051219-c72919cabcde+dirty (commit " + rev + ", built 2026-12-06T05:12:19Z) (modified)"},
		{"go build in a clean clone, no module version", placeholders, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", rev, "vcs.time", "2026-12-06T05:12:19Z", "vcs.modified", "false")},
			build{Version: "dev", Commit: rev, Date: "2026-12-06T05:12:19Z", GoVersion: "go1.26.8"},
			"driftback dev (commit " + rev + ", built 2026-12-06T05:12:19Z)"},
		{"go install @tag", placeholders, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.0"}},
			build{Version: "v0.1.0", Commit: "unknown", Date: "unknown", GoVersion: "go1.26.8"},
			"driftback v0.1.0 (commit unknown, built unknown)"},
		{"go install @commit", placeholders, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.1-0.20261206051219-c72919cabcde"}},
			build{Version: "v0.1.1-0.20261206051219-c72919cabcde", Commit: "c72919cabcde", Date: "2026-12-06T05:12:19Z", GoVersion: "go1.26.8"},
			"driftback v0.1.1-0.20261206051219-c72919cabcde (commit c72919cabcde, built 2026-12-06T05:12:19Z)"},
		{"-ldflags win", Binary{Version: "v0.1.0", Commit: "abc123", Date: "2026-12-06T00:00:00Z"}, clone,
			build{Version: "v0.1.0", Commit: "abc123", Date: "2026-12-06T00:00:00Z", GoVersion: "go1.26.8"},
			"driftback v0.1.0 (commit abc123, built 2026-12-06T00:00:00Z)"},
		{"-ldflags version only", Binary{Version: "v0.1.0", Commit: "unknown", Date: "unknown"}, clone,
			build{Version: "v0.1.0", Commit: rev, Date: "2026-12-06T05:12:19Z", GoVersion: "go1.26.8", Modified: true},
			"driftback v0.1.0 (commit " + rev + ", built 2026-12-06T05:12:19Z) (modified)"},
	}
	for _, c := range cases {
		got := readBuild(c.bin, c.info)
		c.want.Platform = runtime.GOOS + "/" + runtime.GOARCH
		if got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
		if got.line() != c.line {
			t.Errorf("%s: line %q, want %q", c.name, got.line(), c.line)
		}
	}
}

func TestPseudoVersion(t *testing.T) {
	for v, want := range map[string][2]string{
		"v0.0.0-20261206051219-c72919cabcde":        {"c72919cabcde", "2026-12-06T05:12:19Z"},
		"v0.1.1-0.20261206051219-c72919cabcde":      {"c72919cabcde", "2026-12-06T05:12:19Z"},
		"v0.2.0-rc.1.0.20261206051219-c72919cabcde": {"c72919cabcde", "2026-12-06T05:12:19Z"},
		"v0.0.0-20261206051219-c72919cabcde+dirty":  {"c72919cabcde", "2026-12-06T05:12:19Z"},
		"v0.1.0":                             {"", ""},
		"v0.1.0-rc.1":                        {"", ""},
		"(devel)":                            {"", ""},
		"v0.0.0-20261399999999-c72919cabcde": {"", ""}, // no such time
	} {
		rev, date := pseudoVersion(v)
		if rev != want[0] || date != want[1] {
			t.Errorf("%s: %q %q, want %q", v, rev, date, want)
		}
	}
}

// Issue 55, item 9: version takes kubectl version's flags. --short is the
// version alone; --client is plain version (driftback has no server
// part); -o yaml is -o json's document; --short and -o are one or the
// other, as in kubectl.
func TestVersionTakesKubectlFlags(t *testing.T) {
	text, _, _ := driftback(t, "version")
	js, _, _ := driftback(t, "version", "-o", "json")
	fields := strings.Fields(text)
	if len(fields) < 2 || js == "" {
		t.Fatalf("version %q, -o json %q", text, js)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--short"}, fields[1] + "\n"},
		{[]string{"--client"}, text},
		{[]string{"--client", "-o", "json"}, js},
	} {
		if out, stderr, code := driftback(t, append([]string{"version"}, c.args...)...); code != 0 || out != c.want || stderr != "" {
			t.Errorf("version %v: exit %d, stdout %q, stderr %q; want %q", c.args, code, out, stderr, c.want)
		}
	}
	ys, stderr, code := driftback(t, "version", "-o", "yaml")
	var fromJSON, fromYAML map[string]any
	if err := json.Unmarshal([]byte(js), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(ys), &fromYAML); err != nil || code != 0 || stderr != "" || !reflect.DeepEqual(fromJSON, fromYAML) ||
		!strings.HasPrefix(ys, "version: ") {
		t.Errorf("-o yaml: exit %d, %v, stderr %q: %v is not -o json's %v\n%s", code, err, stderr, fromYAML, fromJSON, ys)
	}
	if out, stderr, code := driftback(t, "version", "--short", "-o", "json"); code != 2 || out != "" ||
		!strings.Contains(stderr, "--short and -o both say what to print; give one") || !strings.Contains(stderr, "Run 'driftback version --help' for usage.") {
		t.Errorf("--short -o json: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	help, _, _ := driftback(t, "version", "--help")
	for _, flag := range []string{"--short", "--client", "output format: text, json or yaml"} {
		if !strings.Contains(help, flag) {
			t.Errorf("version --help does not name %s:\n%s", flag, help)
		}
	}
}
