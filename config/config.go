package config

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Built-in defaults, used where neither a target nor defaults: sets a value.
const (
	DefaultPollInterval = time.Minute
	DefaultListen       = ":8080"
	// A cluster's client rate: client-go's own default (5/s) made a poll
	// of 100 targets wait minutes on the limiter.
	DefaultQPS          = 20
	DefaultBurst        = 40
	DefaultAPIURL       = "https://api.github.com/"
	DefaultBranchPrefix = "driftback/"
	DefaultInstance     = "default"
)

// MaxFileBytes bounds what Load reads.
const MaxFileBytes = 1 << 20

// Load reads and parses the config file at path.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(path, f)
}

// Read reads and parses a config from r, a file or standard input; name
// is what errors call it.
func Read(name string, r io.Reader) (*Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, Errors{{File: name, Msg: "larger than 1 MiB; this is not a driftback config"}}
	}
	return Parse(name, data)
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse decodes and validates a config; name is the file name used in
// errors. On success, top-level defaults (pollInterval, listen,
// github.apiURL) and the built-in defaults under defaults: are filled in,
// and paths are cleaned; targets keep what the file says (use Target or
// ResolvedTargets for the merged view). On failure the error is Errors.
func Parse(name string, data []byte) (*Config, error) {
	fileErr := func(line, col int, msg string) error {
		return Errors{{File: name, Line: line, Column: col, Msg: msg}}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fileErr(1, 1, "the file is empty; a driftback config needs at least github, clusters and targets")
		}
		return nil, syntaxError(name, err)
	}
	// A second document is an error, unless it is empty (a trailing ---).
	for {
		var more yaml.Node
		err := dec.Decode(&more)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, syntaxError(name, err)
		}
		if len(more.Content) > 0 && !isNull(more.Content[0]) {
			return nil, fileErr(more.Line, 1, "a second YAML document starts here; a driftback config is one document, so remove this --- separator (or move what follows to its own file)")
		}
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, fileErr(1, 1, "the file is empty; a driftback config needs at least github, clusters and targets")
	}
	root := doc.Content[0]
	if root.Kind == yaml.AliasNode && root.Alias != nil {
		root = root.Alias
	}
	if root.Kind != yaml.MappingNode {
		return nil, fileErr(root.Line, root.Column, "the file must be a mapping with the keys github, pollInterval, listen, clusters, defaults and targets; got "+describe(root))
	}

	d := newDecoder(name)
	c := &Config{}
	d.decode("", root, reflect.ValueOf(c).Elem(), 0, false)
	d.validate(c)
	if len(d.errs) > 0 {
		d.errs.sort()
		return nil, dedupe(d.errs)
	}
	c.fillDefaults()
	return c, nil
}

// parserProblems are the messages of the YAML parser (as opposed to the
// scanner), from go.yaml.in/yaml/v3's parserc.go.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

func syntaxError(name string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		// go.yaml.in/yaml/v3 reports the 0-based line for parser errors
		// (the scanner's are 1-based already).
		if parserProblems[msg] {
			line++
		}
	}
	return Errors{{File: name, Line: line, Msg: "not valid YAML: " + msg}}
}

// dedupe drops errors repeated at one position (an alias reused in several
// places reports its problem once).
func dedupe(es Errors) Errors {
	out := es[:0]
	seen := map[string]bool{}
	for _, e := range es {
		k := e.Error()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return out
}

func (c *Config) fillDefaults() {
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Instance == "" {
		c.Instance = DefaultInstance
	}
	for i := range c.Clusters {
		cl := &c.Clusters[i]
		if cl.QPS == 0 {
			cl.QPS = DefaultQPS
		}
		if cl.Burst == 0 {
			cl.Burst = DefaultBurst
		}
	}
	if c.GitHub.APIURL == "" {
		c.GitHub.APIURL = DefaultAPIURL
	} else if !strings.HasSuffix(c.GitHub.APIURL, "/") {
		c.GitHub.APIURL += "/"
	}
	if c.Defaults.PullRequest.BranchPrefix == "" {
		c.Defaults.PullRequest.BranchPrefix = DefaultBranchPrefix
	}
	if c.Defaults.PullRequest.Draft == nil {
		c.Defaults.PullRequest.Draft = ptr(false)
	}
	if c.Defaults.FailOnRefusal == nil {
		c.Defaults.FailOnRefusal = ptr(true)
	}
	if c.Defaults.ProposeRestored == nil {
		c.Defaults.ProposeRestored = ptr(false)
	}
	for i := range c.Targets {
		t := &c.Targets[i]
		t.Root = path.Clean(t.Root)
		if t.WriteScope != "" {
			t.WriteScope = path.Clean(t.WriteScope)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// Cluster returns the cluster with the given name, or nil.
func (c *Config) Cluster(name string) *Cluster {
	for i := range c.Clusters {
		if c.Clusters[i].Name == name {
			return &c.Clusters[i]
		}
	}
	return nil
}

// Target returns the named target with the defaults merged in, or nil. The
// result is a copy: appliers, pullRequest (field by field) and
// failOnRefusal and proposeRestored come from the target where it sets them, else from
// defaults, else from the built-in defaults; ignore is defaults.ignore
// followed by the target's own rules. In the result PullRequest, its Draft
// FailOnRefusal and ProposeRestored are never nil.
func (c *Config) Target(name string) *Target {
	for i := range c.Targets {
		if c.Targets[i].Name == name {
			return c.resolve(&c.Targets[i])
		}
	}
	return nil
}

// ResolvedTargets returns every target, in file order, as Target returns it.
func (c *Config) ResolvedTargets() []*Target {
	out := make([]*Target, len(c.Targets))
	for i := range c.Targets {
		out[i] = c.resolve(&c.Targets[i])
	}
	return out
}

// Resolve is a target with the defaults merged in, as ResolvedTargets
// gives them (a discovered target is resolved this way too).
func (c *Config) Resolve(t *Target) *Target { return c.resolve(t) }

func (c *Config) resolve(src *Target) *Target {
	t := *src
	def := c.Defaults

	t.Namespaces = clone(src.Namespaces)
	t.Kinds = Kinds{Include: clone(src.Kinds.Include), Exclude: clone(src.Kinds.Exclude)}
	if src.AppliedRevision.Flux != nil {
		t.AppliedRevision.Flux = ptr(*src.AppliedRevision.Flux)
	}
	if src.AppliedRevision.ArgoCD != nil {
		t.AppliedRevision.ArgoCD = ptr(*src.AppliedRevision.ArgoCD)
	}
	if src.AppliedRevision.HelmRelease != nil {
		t.AppliedRevision.HelmRelease = ptr(*src.AppliedRevision.HelmRelease)
	}

	// Neither set: nil, and the cluster package's defaults apply.
	t.Appliers = clone(def.Appliers)
	if src.Appliers != nil {
		t.Appliers = clone(src.Appliers)
	}

	t.Ignore = append(clone(def.Ignore), src.Ignore...)
	if len(t.Ignore) == 0 {
		t.Ignore = nil
	}

	pr := PullRequest{
		BranchPrefix:  def.PullRequest.BranchPrefix,
		Labels:        clone(def.PullRequest.Labels),
		Reviewers:     clone(def.PullRequest.Reviewers),
		TeamReviewers: clone(def.PullRequest.TeamReviewers),
		Draft:         def.PullRequest.Draft,
	}
	if o := src.PullRequest; o != nil {
		if o.BranchPrefix != "" {
			pr.BranchPrefix = o.BranchPrefix
		}
		if o.Labels != nil {
			pr.Labels = clone(o.Labels)
		}
		if o.Reviewers != nil {
			pr.Reviewers = clone(o.Reviewers)
		}
		if o.TeamReviewers != nil {
			pr.TeamReviewers = clone(o.TeamReviewers)
		}
		if o.Draft != nil {
			pr.Draft = o.Draft
		}
	}
	if pr.BranchPrefix == "" {
		pr.BranchPrefix = DefaultBranchPrefix
	}
	if pr.Draft == nil {
		pr.Draft = ptr(false)
	} else {
		pr.Draft = ptr(*pr.Draft)
	}
	t.PullRequest = &pr

	switch {
	case src.FailOnRefusal != nil:
		t.FailOnRefusal = ptr(*src.FailOnRefusal)
	case def.FailOnRefusal != nil:
		t.FailOnRefusal = ptr(*def.FailOnRefusal)
	default:
		t.FailOnRefusal = ptr(true)
	}
	switch {
	case src.ProposeRestored != nil:
		t.ProposeRestored = ptr(*src.ProposeRestored)
	case def.ProposeRestored != nil:
		t.ProposeRestored = ptr(*def.ProposeRestored)
	default:
		t.ProposeRestored = ptr(false)
	}
	return &t
}

func clone[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

// Branch is the name of the target's pull request branch: the branch
// prefix (resolved, else the built-in default) followed by the name.
func (t *Target) Branch() string {
	prefix := DefaultBranchPrefix
	if t.PullRequest != nil && t.PullRequest.BranchPrefix != "" {
		prefix = t.PullRequest.BranchPrefix
	}
	return prefix + t.Name
}

// CheckName is the name of the target's check run (DESIGN §11).
func (t *Target) CheckName() string { return "driftback/" + t.Name }

// Owner and RepoName split Repo ("my-org/shop") into its two parts.
func (t *Target) Owner() string {
	owner, _, _ := strings.Cut(t.Repo, "/")
	return owner
}

// RepoName is the repository part of Repo.
func (t *Target) RepoName() string {
	_, name, _ := strings.Cut(t.Repo, "/")
	return name
}

// RevisionSource tells where a target's applied revision is read.
type RevisionSource string

// The applied-revision sources (DESIGN §7).
const (
	RevisionFlux        RevisionSource = "flux"
	RevisionArgoCD      RevisionSource = "argocd"
	RevisionHelmRelease RevisionSource = "helmRelease"
	RevisionHead        RevisionSource = "head"
)

// Source returns which of flux, argocd, helmRelease or head is set ("" if none, which a
// parsed config never has).
func (r AppliedRevision) Source() RevisionSource {
	switch {
	case r.Flux != nil:
		return RevisionFlux
	case r.ArgoCD != nil:
		return RevisionArgoCD
	case r.HelmRelease != nil:
		return RevisionHelmRelease
	case r.Head:
		return RevisionHead
	}
	return ""
}

// Allows reports whether an object of the given API group and kind is
// compared. An entry "Kind" matches the kind in any group; "Kind.group"
// matches only that group (the core group is "").
func (k Kinds) Allows(group, kind string) bool {
	match := func(list []string) bool {
		for _, e := range list {
			ek, eg, hasGroup := strings.Cut(e, ".")
			if ek == kind && (!hasGroup || eg == group) {
				return true
			}
		}
		return false
	}
	if len(k.Include) > 0 && !match(k.Include) {
		return false
	}
	return !match(k.Exclude)
}
