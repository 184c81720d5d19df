package githubtest

import (
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
)

// shapeRouter finds the description's route for a request as its router
// does, remembering the answer by the path's shape. The description's
// router tries its ~800 path templates' regular expressions in order on
// every request (a fifth of the in-process GitHub's CPU at 10,000
// targets), and which one matches depends only on the shape: a template's
// literal segment matches only that text, a whole-segment parameter any
// non-empty segment. So a segment that is no template's literal text, not
// empty and without a "." (compare's {base}...{head} looks inside) can
// stand for all such segments. Only routes whose parameters are whole
// segments are remembered; anything else asks the router every time.
type shapeRouter struct {
	router   routers.Router
	literals map[string]bool // every literal segment of the description's paths

	mu     sync.Mutex
	shapes map[string]*routers.Route // path shape -> the route it matched, Method and Operation unset
}

func newShapeRouter(doc *openapi3.T, router routers.Router) *shapeRouter {
	s := &shapeRouter{router: router, literals: map[string]bool{}, shapes: map[string]*routers.Route{}}
	for _, p := range doc.Paths.InMatchingOrder() {
		for _, seg := range strings.Split(p, "/") {
			if !strings.ContainsAny(seg, "{}") {
				s.literals[seg] = true
			}
		}
	}
	return s
}

// placeholder stands for a segment that matches only parameters; it is
// not a valid escaped path segment, so it cannot be mistaken for one.
const placeholder = "{}"

// shape is path with every segment that can match only a parameter
// replaced by the placeholder.
func (s *shapeRouter) shape(segs []string) string {
	out := make([]string, len(segs))
	for i, seg := range segs {
		if seg == "" || s.literals[seg] || strings.Contains(seg, ".") {
			out[i] = seg
		} else {
			out[i] = placeholder
		}
	}
	return strings.Join(out, "/")
}

// FindRoute is routers.Router's FindRoute, with the same answers.
func (s *shapeRouter) FindRoute(req *http.Request) (*routers.Route, map[string]string, error) {
	segs := strings.Split(req.URL.EscapedPath(), "/")
	key := s.shape(segs)
	s.mu.Lock()
	known, ok := s.shapes[key]
	s.mu.Unlock()
	if !ok {
		route, vars, err := s.router.FindRoute(req)
		if err != nil {
			return route, vars, err
		}
		if !wholeSegmentParams(route.Path, len(segs)) {
			return route, vars, nil
		}
		known = &routers.Route{Spec: route.Spec, Server: route.Server, Path: route.Path, PathItem: route.PathItem}
		s.mu.Lock()
		s.shapes[key] = known
		s.mu.Unlock()
	}
	route := *known
	route.Method = req.Method
	route.Operation = route.PathItem.GetOperation(req.Method)
	if route.Operation == nil {
		return nil, nil, routers.ErrMethodNotAllowed
	}
	vars := map[string]string{}
	for i, seg := range strings.Split(route.Path, "/") {
		if name, ok := paramName(seg); ok {
			vars[name] = segs[i]
		}
	}
	return &route, vars, nil
}

// wholeSegmentParams reports whether template has n segments, each either
// literal or one whole {parameter}.
func wholeSegmentParams(template string, n int) bool {
	segs := strings.Split(template, "/")
	if len(segs) != n {
		return false
	}
	for _, seg := range segs {
		if _, ok := paramName(seg); !ok && strings.ContainsAny(seg, "{}") {
			return false
		}
	}
	return true
}

// paramName is the name of a {name} segment.
func paramName(seg string) (string, bool) {
	if len(seg) < 3 || seg[0] != '{' || seg[len(seg)-1] != '}' || strings.ContainsAny(seg[1:len(seg)-1], "{}") {
		return "", false
	}
	return seg[1 : len(seg)-1], true
}
