package metrics

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every metric the product names is in metricDefs: the bot's packages (the
// GitHub client counts into the bot's registry) and the commands. One
// missing there would be silently dropped.
func TestEveryMetricIsDeclared(t *testing.T) {
	var files []string
	for _, dir := range []string{"../../bot", "../../commands"} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	call := regexp.MustCompile(`\.(?:Inc|Add|Set|Observe|Time|Reset|Get)\("(driftback_[a-z_]+)"`)
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			seen++
			if _, ok := metricDefs[m[1]]; !ok {
				t.Errorf("%s: metric %s is not in metricDefs", f, m[1])
			}
		}
	}
	if seen < 10 {
		t.Errorf("found only %d metric call sites; the pattern is stale", seen)
	}
}
