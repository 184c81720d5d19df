package analyzer

import (
	"fmt"
	"sort"
	"strings"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// The plan is driftback's one output: what to write, where, and what was
// refused. Its JSON form is a public contract (`driftback plan -o json`),
// so field names and meanings change only with care.

// Routes say where an edit is written.
const (
	RouteSource   = "source"   // written through to the source document
	RouteImages   = "images"   // an images: entry of a kustomization
	RouteReplicas = "replicas" // a replicas: entry of a kustomization
	// RouteSubstitute: a Flux substitution variable, where it is set.
	RouteSubstitute = "substitute"
	// Value inputs, found by the dye (analyzer/dye):
	RoutePatch       = "patch"       // a value of a patch, in a file or inline
	RouteLabel       = "labels"      // a labels:, commonLabels: or commonAnnotations: value
	RouteGenerator   = "generator"   // a configMapGenerator literal, env-file line or file
	RouteReplacement = "replacement" // a replacement's source field, or its sourceValue
	RouteOverlay     = "overlay"     // an override in the target's own folder: a patch, or a merge generator entry
	// RouteHelmValues: a HelmRelease's values leaf, in its spec.values or
	// a valuesFrom ConfigMap kept beside it (helmroot.go).
	RouteHelmValues = "helm-values"
)

// Routes lists every route above, in the order declared, for what must
// name them all (README's list of routes). TestConstantListsAreWhole
// fails when a constant is added above and not here.
var Routes = []string{
	RouteSource, RouteImages, RouteReplicas, RouteSubstitute,
	RoutePatch, RouteLabel, RouteGenerator, RouteReplacement, RouteOverlay,
	RouteHelmValues,
}

// Refusal codes, shown to users; stable (DESIGN §10).
const (
	CodeBuildOwned          = "build-owned"
	CodeUnplaceableEdit     = "unplaceable-edit"
	CodeRenderMismatch      = "render-mismatch"
	CodeUnsupported         = "unsupported-kustomization"
	CodeRenderFailed        = "render-failed"
	CodeWriteFanIn          = "write-fan-in"
	CodeOutOfScope          = "out-of-scope"
	CodeSensitive           = "sensitive"
	CodeSharedEntryConflict = "shared-entry-conflict"
	CodeOrchestratorContext = "orchestrator-context"
	CodeNotAppliedYet       = "not-applied-yet"
	CodeNotInCluster        = "not-in-cluster"
	CodeEncryptedSource     = "encrypted-source"
	// A HelmRelease root's codes, analyzer/helm's (helm.Codes): the
	// prober's, then the release's.
	CodeHelmNoLeaf          = "helm-no-leaf"
	CodeHelmSeveralLeaves   = "helm-several-leaves"
	CodeHelmTemplateValue   = "helm-template-value"
	CodeHelmNondeterminism  = "helm-nondeterministic"
	CodeHelmMovesOthers     = "helm-leaf-moves-others"
	CodeHelmNotReproduced   = "helm-not-reproduced"
	CodeHelmTooManyLeaves   = "helm-too-many-leaves"
	CodeHelmChartOutsideGit = "helm-chart-outside-git"
	CodeHelmValuesOutside   = "helm-values-outside-git"
	CodeHelmPostRenderers   = "helm-post-renderers"
	CodeHelmUnsupported     = "helm-unsupported"
)

// Codes lists every refusal code above, in the order declared, for what
// must cover them all (docs/troubleshooting.md). TestConstantListsAreWhole
// fails when a constant is added above and not here.
var Codes = []string{
	CodeBuildOwned, CodeUnplaceableEdit, CodeRenderMismatch, CodeUnsupported,
	CodeRenderFailed, CodeWriteFanIn, CodeOutOfScope, CodeSensitive,
	CodeSharedEntryConflict, CodeOrchestratorContext, CodeNotAppliedYet,
	CodeNotInCluster, CodeEncryptedSource,
	CodeHelmNoLeaf, CodeHelmSeveralLeaves, CodeHelmTemplateValue, CodeHelmNondeterminism,
	CodeHelmMovesOthers, CodeHelmNotReproduced, CodeHelmTooManyLeaves,
	CodeHelmChartOutsideGit, CodeHelmValuesOutside, CodeHelmPostRenderers, CodeHelmUnsupported,
}

// ObjectRef names a Kubernetes object.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

// String reads as kind/namespace/name, the way kubectl users name objects.
func (o ObjectRef) String() string {
	if o.Kind == "" && o.Name == "" {
		return ""
	}
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// RefOf names a live or rendered object the way plans name it.
func RefOf(obj map[string]any) ObjectRef {
	id := render.IDOf(obj)
	return ObjectRef{APIVersion: render.APIVersionOf(obj), Kind: id.Kind, Namespace: id.Namespace, Name: id.Name}
}

// Edit is one routed change: the field's value in Git's render (From) is
// replaced by what the cluster runs (To), written to File at Line.
type Edit struct {
	Object ObjectRef `json:"object"`
	Field  string    `json:"field"`
	From   any       `json:"from"`
	To     any       `json:"to"`
	File   string    `json:"file"`
	Line   int       `json:"line"`
	Route  string    `json:"route"`
}

// Refusal is a change driftback will not write, with the reason and how a
// person can resolve it.
type Refusal struct {
	Code    string    `json:"code"`
	Object  ObjectRef `json:"object"`
	Field   string    `json:"field"`
	File    string    `json:"file"`
	Line    int       `json:"line,omitempty"`
	Message string    `json:"message"`
	Hint    string    `json:"hint"`
	// CannotTell marks a refusal whose only evidence is who owns a field
	// whose value is never read (a Secret's data key, DESIGN §5.4):
	// driftback cannot tell whether it still differs, so the check run
	// says so (neutral) rather than fail.
	CannotTell bool `json:"cannotTell,omitempty"`
}

// Subject is the edit the refusal stands for, by its object and field
// only: to ask who changed that field.
func (r Refusal) Subject() Edit {
	return Edit{Object: r.Object, Field: r.Field}
}

// Fidelity says whether driftback's render is what the GitOps tool
// applied, as far as the cluster's records tell (DESIGN §5.2).
type Fidelity struct {
	// Verdict is FidelityMatch, FidelityDiffers (Fields says where) or
	// FidelityUnknown (no live object came with managedFields).
	Verdict string        `json:"verdict"`
	Fields  []ToolApplied `json:"fields,omitempty"`
}

// Fidelity verdicts.
const (
	FidelityMatch   = "match"
	FidelityDiffers = "differs"
	FidelityUnknown = "unknown"
)

// ToolApplied is a field whose live value differs from driftback's render
// while only the GitOps tool's own writer wrote it: the tool applied that
// value, or the API server or a webhook changed it inside the tool's
// request. Never an edit and never "the tool will restore it".
type ToolApplied struct {
	Object ObjectRef `json:"object"`
	Field  string    `json:"field"`
	// Applied is the live value, Rendered driftback's; both left out for
	// values driftback never shows (a Secret's, a SOPS ciphertext).
	Applied  any    `json:"applied,omitempty"`
	Rendered any    `json:"rendered,omitempty"`
	Writer   string `json:"writer"`
	// Cause: "render" (the tool's own record of what it applied holds
	// the live value: its render differs from driftback's), "server"
	// (that record holds driftback's value: the API server or a webhook
	// changed it), "" (a server-side apply keeps no such record).
	Cause string `json:"cause,omitempty"`
	File  string `json:"file,omitempty"`
}

// File is the full new content of a file the plan changes.
type File struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Deleted bool   `json:"deleted,omitempty"`
}

// Plan is the result of analysing one root against the live objects.
type Plan struct {
	Root     string    `json:"root"`
	Edits    []Edit    `json:"edits"`
	Refusals []Refusal `json:"refusals"`
	Files    []File    `json:"files"`
	Notes    []string  `json:"notes"`
	Fidelity Fidelity  `json:"fidelity,omitzero"`
	// Unread lists rendered objects the read of the cluster did not cover
	// (a kind not listed, or none of it read): with any, the plan is no
	// verdict on the cluster.
	Unread []string `json:"unread,omitempty"`
	// Untracked are the live objects read that the root does not render;
	// the notes name them one by one only when they are few.
	Untracked []ObjectRef `json:"untracked,omitempty"`
	// Kinds are the kinds the render held (kube.KindKey: Kind, or
	// Kind.group), sorted: a poller need list no other kind to plan this
	// root again at the same revision.
	Kinds []string `json:"-"`
	// Metadata is, by object, the labels and annotations Git's render
	// gives the keys Options.MetadataKeys asked for, as metadata holds
	// them ({labels: {...}, annotations: {...}}); an object that carries
	// none of them is not listed.
	Metadata map[ObjectRef]map[string]any `json:"-"`
	// HelmRelease is set when the root is a file holding a Flux
	// HelmRelease, rendered by Helm (helmroot.go): what renders it is
	// helm-controller, not `kubectl apply -k`.
	HelmRelease bool `json:"-"`
}

// InSync reports whether the cluster matches Git: everything read, nothing
// to write and nothing refused.
func (p *Plan) InSync() bool { return len(p.Edits) == 0 && len(p.Refusals) == 0 && len(p.Unread) == 0 }

// addWritten lists every written file that differs from the repository,
// YAML or not (an env file a literal lives in), by path: what any placer
// reports of the files it wrote.
func (p *Plan) addWritten(repo *repofs.Repo, written map[string][]byte) {
	paths := make([]string, 0, len(written))
	for path := range written {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		orig, _ := repo.File(path)
		now := written[path]
		if string(orig) != string(now) {
			p.Files = append(p.Files, File{Path: path, Content: string(now)})
		}
	}
}

// sortRows puts the edits and refusals in a stable order, by object and
// field, once a placer has added its own.
func (p *Plan) sortRows() {
	sort.SliceStable(p.Edits, func(i, j int) bool {
		ei, ej := p.Edits[i], p.Edits[j]
		if ei.Object.String() != ej.Object.String() {
			return ei.Object.String() < ej.Object.String()
		}
		return ei.Field < ej.Field
	})
	sort.SliceStable(p.Refusals, func(i, j int) bool {
		ri, rj := p.Refusals[i], p.Refusals[j]
		if ri.Object.String() != rj.Object.String() {
			return ri.Object.String() < rj.Object.String()
		}
		return ri.Field < rj.Field
	})
}

// finisher is the finish stage: it turns what verify proved, and the
// writes planned before it, into the plan's edits, notes and files. It
// holds only what that needs.
type finisher struct {
	plan  *Plan
	repo  *repofs.Repo // the files as they were: a written file the plan changed is one of its files
	pairs []pair
	*writes
}

func (f *finisher) pairOf(id render.ID) *pair { return findPair(f.pairs, id) }

func (f *finisher) note(format string, args ...any) {
	f.plan.Notes = append(f.plan.Notes, fmt.Sprintf(format, args...))
}

// finish turns the verified candidates into edits and files, in a stable
// order.
func (f *finisher) finish(v *verified) {
	for _, c := range v.candidates {
		if c.over != nil {
			f.overrideEdits(c, v.final)
			continue
		}
		final := v.final[c.file]
		if len(c.changed) == 0 {
			continue
		}
		for _, p := range c.changed {
			from, _ := jsonvalue.Get(c.ren.Object, p)
			to, _ := jsonvalue.Get(c.want, p)
			f.plan.Edits = append(f.plan.Edits, Edit{
				Object: RefOf(c.ren.Object), Field: p.String(), From: from, To: to,
				File: c.file, Line: lineOf(final, c.doc, p), Route: RouteSource,
			})
		}
	}
	f.routeEdits(v.final)
	f.varEdits(v.final)
	f.placedEdits(v.final)
	f.renameNotes(v)
	f.plan.addWritten(f.repo, v.written)
	f.plan.sortRows()
}

// routeEdits reports each verified entry route once per slot it carries
// first, merging the fields one entry changes for the same slot (newTag and
// digest together).
func (f *finisher) routeEdits(final map[string]*yamledit.File) {
	type key struct {
		entry dye.Entry
		name  string
		slot  string
	}
	seen := map[key]bool{}
	for _, r := range f.routing.routes {
		if len(r.Slots) == 0 {
			continue
		}
		first := r.Slots[0]
		name := ""
		if r.Author != nil {
			name = r.Author.Name
		}
		k := key{r.Entry, name, first.Key()}
		if seen[k] {
			continue
		}
		seen[k] = true
		p := f.pairOf(first.Obj)
		if p == nil {
			continue
		}
		from, _ := jsonvalue.Get(p.ren.Object, first.Path)
		to, _ := jsonvalue.Get(p.intent, first.Path)
		route := RouteImages
		if r.Entry.List == "replicas" {
			route = RouteReplicas
		}
		f.plan.Edits = append(f.plan.Edits, Edit{
			Object: RefOf(p.ren.Object), Field: first.Path.String(), From: from, To: to,
			File: r.Entry.File(), Line: entryLine(final[r.Entry.File()], r), Route: route,
		})
		if len(r.Slots) > 1 {
			var others []string
			for _, s := range r.Slots[1:] {
				others = append(others, s.Obj.Ref()+" "+s.Path.String())
			}
			f.note("%s also carries this change to %s", describeRoute(r), strings.Join(others, ", "))
		}
	}
}

func describeRoute(r *route) string {
	if r.Author != nil {
		return fmt.Sprintf("the new %s entry %s in %s", r.Entry.List, r.Author.Name, r.Entry.Node.File)
	}
	return r.Entry.String()
}

// renameNotes says, for each generated object the verified plan renames,
// its new name and what rolls with it: merging changes the object's name
// and every reference to it.
func (f *finisher) renameNotes(v *verified) {
	for _, c := range v.candidates {
		r, ok := v.renamed[c.ren.ID]
		if !ok {
			continue
		}
		msg := fmt.Sprintf("%s is named by a hash of its content (%s): merging renames it %s", RefOf(c.ren.Object), c.ren.Generated, r.to)
		switch len(r.roll) {
		case 0:
		case 1:
			msg += ", and " + r.roll[0] + ", which refers to it in its pod template, rolls out new pods"
		default:
			msg += ", and " + strings.Join(r.roll, ", ") + ", which refer to it in their pod templates, roll out new pods"
		}
		switch len(r.refer) {
		case 0:
			if len(r.roll) == 0 {
				msg += "; nothing else in this target refers to it"
			}
		case 1:
			msg += "; " + r.refer[0] + " refers to it and is rewritten to the new name"
		default:
			msg += "; " + strings.Join(r.refer, ", ") + " refer to it and are rewritten to the new name"
		}
		f.note("%s", msg)
	}
}
