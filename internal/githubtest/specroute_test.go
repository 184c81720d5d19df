package githubtest

import (
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The shape router answers every request as the description's own router
// does: for every path of the description, with parameter values that are
// plain, another path's literal text, numbers, dotted, compare's "..." and
// escaped slashes, in every method the path has and one it lacks, asked
// twice (the second answer remembered) and with a second set of values of
// the same shape.
func TestShapeRouterAnswersAsTheDescriptionsRouter(t *testing.T) {
	sp, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := gorillamux.NewRouter(sp.doc)
	if err != nil {
		t.Fatal(err)
	}
	shapes := newShapeRouter(sp.doc, plain)
	values := [][]string{{"octo", "hello"}, {"git", "pulls"}, {"42", "7"}, {"v1.2", "a.b"}, {"main...topic", "x...y"}, {"heads%2Fdriftback%2Fweb", "a%2Fb"}, {"check-runs", "comments"}}
	asked := 0
	for _, template := range sp.doc.Paths.InMatchingOrder() {
		item := sp.doc.Paths.Value(template)
		methods := append(keysOf(item.Operations()), "PROPFIND")
		for _, vals := range values {
			for _, v := range vals {
				path := fillTemplate(template, v)
				for _, m := range methods {
					req := &http.Request{Method: m, Host: specHost, URL: &url.URL{Scheme: "https", Host: specHost, RawPath: path, Path: mustUnescape(t, path)}}
					want, wantVars, wantErr := plain.FindRoute(req)
					for range 2 {
						got, gotVars, gotErr := shapes.FindRoute(req)
						asked++
						if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
							t.Fatalf("%s %s: error %v, the description's router says %v", m, path, gotErr, wantErr)
						}
						if wantErr != nil {
							continue
						}
						if got.Path != want.Path || got.Operation != want.Operation || got.Method != want.Method || !maps.Equal(gotVars, wantVars) {
							t.Fatalf("%s %s: routed to %s %v, the description's router to %s %v", m, path, got.Path, gotVars, want.Path, wantVars)
						}
					}
				}
			}
		}
	}
	remembered := len(shapes.shapes)
	if remembered == 0 || remembered >= asked/4 {
		t.Fatalf("%d shapes remembered for %d requests: the memo is not used", remembered, asked)
	}
}

// fillTemplate puts v in place of every {parameter} of template.
func fillTemplate(template, v string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(template, '{')
		if i < 0 {
			return b.String() + template
		}
		j := strings.IndexByte(template[i:], '}')
		b.WriteString(template[:i] + v)
		template = template[i+j+1:]
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func mustUnescape(t *testing.T, p string) string {
	t.Helper()
	s, err := url.PathUnescape(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
