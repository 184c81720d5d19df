package githubtest

import (
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The description of api.github.com that every request and response is
// checked against. It is generated/api.github.com.json from the npm package
// @octokit/openapi 23.0.2 (MIT, built from github/rest-api-description),
// written by fetch-openapi.sh (npm pack, then gzip -9 -n). sha256 of the
// uncompressed file: 829b4bebb19a53133289f7b0bc819f4f1118115821db2ca9f25e9ee995a7da2a.
// To move to a newer description run `fetch-openapi.sh VERSION` and update
// the version and sha256 here.
//
//go:embed testdata/api.github.com.json.gz
var embeddedSpec []byte

// SpecEnv names a file (.json or .json.gz) that replaces the embedded copy,
// e.g. to try a newer description without rebuilding testdata.
const SpecEnv = "DRIFTBACK_GITHUB_OPENAPI"

// specHost is the server the description is written for; requests are
// rewritten onto it before routing so the description's servers entry matches.
const specHost = "api.github.com"

type spec struct {
	doc    *openapi3.T
	router routers.Router
}

var (
	specOnce sync.Once
	specVal  *spec
	specErr  error
)

// loadSpec parses the 13 MB description once per process: it takes seconds,
// and every Server in a test binary shares it read-only.
func loadSpec() (*spec, error) {
	specOnce.Do(func() {
		data := embeddedSpec
		if p := os.Getenv(SpecEnv); p != "" {
			b, err := os.ReadFile(p)
			if err != nil {
				specErr = fmt.Errorf("githubtest: %s: %w", SpecEnv, err)
				return
			}
			data = b
		}
		if len(data) > 2 && data[0] == 0x1f && data[1] == 0x8b {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				specErr = fmt.Errorf("githubtest: openapi gzip: %w", err)
				return
			}
			data, err = io.ReadAll(zr)
			if err != nil {
				specErr = fmt.Errorf("githubtest: openapi gzip: %w", err)
				return
			}
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(data)
		if err != nil {
			specErr = fmt.Errorf("githubtest: load openapi: %w", err)
			return
		}
		router, err := gorillamux.NewRouter(doc)
		if err != nil {
			specErr = fmt.Errorf("githubtest: openapi router: %w", err)
			return
		}
		specVal = &spec{doc: doc, router: newShapeRouter(doc, router)}
	})
	return specVal, specErr
}

// relaxation says which part of one operation's validation is skipped.
type relaxation struct {
	request  bool // skip request validation entirely
	response bool // skip response validation entirely
	nullBody bool // a literal JSON null body is taken as no body
	// wrapArray: a top-level JSON array body is checked as {wrapArray: array}.
	wrapArray string
	// itemsSchema: an array response is checked item by item against this
	// components schema instead of the operation's own.
	itemsSchema string
	reason      string
}

// relaxed lists, per operation id, where GitHub's description and GitHub's
// behaviour part ways. Keep it short; every entry needs its reason.
var relaxed = map[string]relaxation{
	// The archive body is served by codeload.github.com, a different host
	// that the REST description does not cover.
	codeloadOp: {request: true, response: true, reason: "codeload host, not in api.github.com description"},
	// The manifest form is a github.com web page, not the REST API.
	manifestFormOp: {request: true, response: true, reason: "github.com web form, not in the REST description"},
	// ghinstallation (the product's token source) posts the body `null`
	// when it asks for no narrower permissions; GitHub takes that as no
	// options, the description's object schema does not allow null.
	"apps/create-installation-access-token": {nullBody: true, reason: "ghinstallation sends body null"},
	// go-github's AddLabelsToIssue sends a bare array; the description's
	// text allows it ("You can also pass an array of labels directly") but
	// its schema only has the {"labels": [...]} form.
	"issues/add-labels": {wrapArray: "labels", reason: "bare label array is documented, not in the schema"},
	// The inline item schema declares account as allOf [Simple User,
	// Enterprise], which no account satisfies; the shared "installation"
	// schema (used by apps/get-repo-installation) has the intended anyOf.
	"apps/list-installations": {itemsSchema: "installation", reason: "account allOf should be anyOf"},
}

// codeloadOp is the pseudo operation id of the tarball download URL.
const codeloadOp = "githubtest/codeload"

// Failure is one disagreement between traffic and the description, or a
// handler of this server that panicked.
type Failure struct {
	Kind      string // "request", "response", "route", "webhook" or "panic"
	Method    string
	Path      string
	Operation string
	Err       string
}

func (f Failure) String() string {
	if f.Kind == "panic" {
		return fmt.Sprintf("handler panicked: %s %s (%s): %s", f.Method, f.Path, f.Operation, f.Err)
	}
	return fmt.Sprintf("openapi %s validation: %s %s (%s): %s", f.Kind, f.Method, f.Path, f.Operation, f.Err)
}

// specRequest builds the request the validator sees: the path with every
// parameter escaped (ref names carry '/', which would otherwise split a
// single {ref} segment), on the description's host.
func specRequest(r *http.Request, rt *route, params map[string]string, body []byte) *http.Request {
	p := rt.template
	for name, v := range params {
		p = strings.Replace(p, "{"+name+"}", url.PathEscape(v), 1)
	}
	u := &url.URL{Scheme: "https", Host: specHost, Path: unescapeForPath(p), RawPath: p, RawQuery: r.URL.RawQuery}
	req := r.Clone(context.Background())
	if req.Method == http.MethodHead {
		req.Method = http.MethodGet // the description lists GETs only
	}
	req.URL = u
	req.Host = specHost
	req.RequestURI = ""
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	return req
}

func unescapeForPath(p string) string {
	s, err := url.PathUnescape(p)
	if err != nil {
		return p
	}
	return s
}

// exchange is one request on its way through validation: the matched
// operation, the validator input its response is checked with, and the
// relaxations that apply.
type exchange struct {
	op    string
	input *openapi3filter.RequestValidationInput
	relax relaxation
}

// GitHub's custom media types that answer plain text (the SHA of a ref)
// are checked as text, as the description lists them.
func init() {
	openapi3filter.RegisterBodyDecoder("application/vnd.github.sha", openapi3filter.PlainBodyDecoder)
}

var filterOptions = &openapi3filter.Options{
	// GitHub's description declares no security schemes we rely on; auth is
	// checked by the server itself.
	AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	// Statuses the description does not list (401, 5xx from faults, 304 on
	// most GETs) are GitHub behaviour too; their bodies are not described.
	IncludeResponseStatus: false,
	MultiError:            true,
}

// checkRequest validates the incoming request. It returns nil for
// operations whose request validation is relaxed.
func checkRequest(sp *spec, r *http.Request, rt *route, params map[string]string, body []byte) (*exchange, *Failure) {
	ex := &exchange{op: rt.op, relax: relaxed[rt.op]}
	if rt.op == codeloadOp || rt.op == manifestFormOp {
		return ex, nil
	}
	if ex.relax.nullBody && string(bytes.TrimSpace(body)) == "null" {
		body = nil
	}
	if w := ex.relax.wrapArray; w != "" && bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		body = append(append([]byte(`{"`+w+`":`), body...), '}')
	}
	req := specRequest(r, rt, params, body)
	found, pathParams, err := sp.router.FindRoute(req)
	if err != nil {
		return ex, &Failure{Kind: "route", Method: r.Method, Path: r.URL.Path, Operation: rt.op, Err: err.Error()}
	}
	if found.Operation.OperationID != rt.op {
		return ex, &Failure{Kind: "route", Method: r.Method, Path: r.URL.Path, Operation: rt.op,
			Err: fmt.Sprintf("description routes this to %q", found.Operation.OperationID)}
	}
	ex.input = &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: pathParams,
		Route:      found,
		Options:    filterOptions,
	}
	if ex.relax.request {
		return ex, nil
	}
	if err := openapi3filter.ValidateRequest(context.Background(), ex.input); err != nil {
		return ex, &Failure{Kind: "request", Method: r.Method, Path: r.URL.Path, Operation: rt.op, Err: err.Error()}
	}
	return ex, nil
}

// checkResponse validates what the server is about to send.
func checkResponse(ex *exchange, method, path string, status int, h http.Header, body []byte) *Failure {
	if ex == nil || ex.input == nil || ex.relax.response {
		return nil
	}
	if status == http.StatusMovedPermanently || status == http.StatusTemporaryRedirect {
		return nil // a renamed repository's redirect: the description types only some
	}
	if name := ex.relax.itemsSchema; name != "" && status == http.StatusOK {
		return checkItems(ex, method, path, name, body)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: ex.input,
		Status:                 status,
		Header:                 h,
		Options:                filterOptions,
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return &Failure{Kind: "response", Method: method, Path: path, Operation: ex.op, Err: err.Error()}
	}
	return nil
}

func checkItems(ex *exchange, method, path, name string, body []byte) *Failure {
	fail := func(err error) *Failure {
		return &Failure{Kind: "response", Method: method, Path: path, Operation: ex.op, Err: err.Error()}
	}
	ref := ex.input.Route.Spec.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fail(fmt.Errorf("no components schema %q", name))
	}
	var items []any
	if err := json.Unmarshal(body, &items); err != nil {
		return fail(err)
	}
	for i, it := range items {
		if err := ref.Value.VisitJSON(it, openapi3.VisitAsResponse(), openapi3.MultiErrors()); err != nil {
			return fail(fmt.Errorf("item %d: %w", i, err))
		}
	}
	return nil
}
