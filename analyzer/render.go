package analyzer

import (
	"fmt"
	"sync/atomic"

	"github.com/driftback/driftback/analyzer/gitops"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// RenderCache remembers renders across snapshots (render.Cache).
type RenderCache = render.Cache

// DefaultRenderCacheBytes is the render cache's budget when none is given.
const DefaultRenderCacheBytes = render.DefaultCacheBytes

// NewRenderCache returns a cache keeping renders up to maxBytes (< 1 means
// DefaultRenderCacheBytes). A root costs up to three renders: the plain,
// the dyed and the verified one.
func NewRenderCache(maxBytes int64) *RenderCache { return render.NewCache(maxBytes) }

// renderer runs the builds of one snapshot's plans, through the cache
// shared across snapshots when there is one, counting every kustomize run.
type renderer struct {
	cache  *RenderCache // nil: every render builds
	builds *atomic.Int64
	post   *gitops.Flux // what the GitOps tool does to the built objects; nil: nothing
}

// render builds the tree through the cache.
func (r renderer) render(repo *repofs.Repo, t *ktree.Tree, extra map[string][]byte, parsed map[string]*yamledit.File) ([]render.Object, error) {
	var post render.PostBuild // a nil *gitops.Flux must stay a nil PostBuild
	if r.post != nil {
		post = r.post
	}
	return r.cache.Build(r.builds, repo, t, extra, parsed, post)
}

// RefOf names a live or rendered object the way plans name it.
func RefOf(obj map[string]any) ObjectRef {
	id := render.IDOf(obj)
	return ObjectRef{APIVersion: render.APIVersionOf(obj), Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}
}

// remoteFile says why file, which a remote base supplies, is never
// written; nil for a file of the repository.
func remoteFile(file string) *Refusal {
	rem, inside, ok := ktree.RemoteOf(file)
	if !ok {
		return nil
	}
	return &Refusal{Code: CodeOutOfScope, File: file,
		Message: fmt.Sprintf("the value comes from %s in the remote base %s, which driftback reads but never writes", inside, rem),
		Hint:    "set the value in an overlay of this repository (a patch or an images:/replicas: entry), or change the remote repository and move the ref"}
}
