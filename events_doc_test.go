package main

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The webhook events the pages name are app.yaml's, no more and no fewer
// (issue 54, item 9: DESIGN §12 and install.md had fallen behind
// check_suite and repository; issue 55, item 8: configuration.md behind
// repository). commands' TestAppCreateNamesTheManifestsEvents checks
// `app create`, which reads them from the manifest.
func TestDocsNameTheManifestsEvents(t *testing.T) {
	b, err := os.ReadFile("app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Events []string `json:"default_events"`
	}
	if err := yaml.Unmarshal(b, &m); err != nil || len(m.Events) == 0 {
		t.Fatalf("app.yaml's default_events: %v %v", m.Events, err)
	}
	for _, d := range []struct {
		file, lead, end string
		name            func(string) string
	}{
		// `check_suite`
		{"docs/DESIGN.md", "subscribes to exactly the events the bot acts on (", ";", func(e string) string { return "`" + e + "`" }},
		// *Check suite*
		{"docs/install.md", "Subscribe the App to the events", "(", func(e string) string {
			return "*" + strings.ToUpper(e[:1]) + strings.ReplaceAll(e[1:], "_", " ") + "*"
		}},
		// `check_suite`, outside the guide's steps
		{"docs/install.md", "lists with the events", ":", func(e string) string { return "`" + e + "`" }},
		{"README.md", "says what each is for; events", ", delivered", func(e string) string { return "`" + e + "`" }},
		{"docs/configuration.md", "driftback serves `/webhook` and a", "delivery wakes", func(e string) string { return "`" + e + "`" }},
	} {
		list, ok := pageSays(t, d.file, d.lead, d.end)
		if !ok {
			continue
		}
		named := 0
		for _, e := range m.Events {
			if strings.Contains(list, d.name(e)) {
				named++
			} else {
				t.Errorf("%s: the events it names (%q) leave out %s, which app.yaml subscribes to", d.file, list, d.name(e))
			}
		}
		if n := strings.Count(list, ",") + strings.Count(list, " and ") + strings.Count(list, " or ") + 1; n != named {
			t.Errorf("%s: the events it names (%q) are %d, app.yaml %d", d.file, list, n, len(m.Events))
		}
	}
}

// pageSays is what a page says between lead and end, its runs of white
// space read as one space (a sentence may wrap anywhere). A page that no
// longer says lead is an error of the test, which needs updating.
func pageSays(t *testing.T, file, lead, end string) (string, bool) {
	t.Helper()
	_, rest, ok := strings.Cut(strings.Join(strings.Fields(readFile(t, file)), " "), lead)
	if !ok {
		t.Errorf("%s no longer says %q; update this test", file, lead)
		return "", false
	}
	said, _, _ := strings.Cut(rest, end)
	return said, true
}
