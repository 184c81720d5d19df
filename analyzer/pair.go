package analyzer

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/gitops"
	"github.com/driftback/driftback/analyzer/intent"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/analyzer/sops"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/noise"
)

// pair is a rendered object and the live object it corresponds to.
type pair struct {
	ren    render.Object
	live   map[string]any
	owner  kube.Ownership
	intent map[string]any   // the live object reduced to what a person wants
	inSync bool             // intent equals the render (and is the render's map)
	unseen []jsonvalue.Path // fields a person set in a body never read
	// unseenBy names the managers that own unseen; release is the JSON
	// patch that drops their claims (kube.LiveObject.UnseenRelease).
	unseenBy []string
	release  string
	// applied are the fields that differ from live while only the GitOps
	// tool's writer wrote them: the view holds the render's value there.
	applied []intent.Applied
	// sealed is what pairing found of the render's SOPS ciphertexts: taken
	// as equal to live, but for those a person wrote (sops.go).
	sealed sops.Sealing
}

// pairing is what matching the render with the live objects finds: the
// pairs every later stage works on, and what Snapshot.plan adds to the
// plan (in this order, after what it holds already).
type pairing struct {
	pairs     []pair
	followed  map[string]string // generated names paired by stem: rendered -> live (dye.FollowHashes)
	notes     []string
	refusals  []Refusal
	unread    []string
	untracked []ObjectRef
}

// untrackedNamed is how many untracked objects the notes name one by one;
// past it one note counts them (a cluster-wide read of a big cluster holds
// hundreds of thousands: kube-root-ca.crt in every namespace), and
// Plan.Untracked lists them all.
const untrackedNamed = 5

// pairObjects matches every rendered object with the one live object that
// is it (by group, kind, namespace and name, the version deciding between
// several; a generated name by its stem) and reduces that live object to
// its intent. A rendered object with no live match is absent (judged by
// cov); one with several is refused; a live object nothing renders is
// noted as untracked by root, the plan's root as displayed.
func pairObjects(lives []kube.LiveObject, objects []render.Object, cov *kube.Coverage, root string) *pairing {
	pr := &pairing{}
	lives, pr.followed = dye.FollowHashes(lives, objects)
	byID := map[render.ID][]int{}
	byBare := map[render.ID][]int{}
	for i, l := range lives {
		id := render.IDOf(l.Object)
		byID[id] = append(byID[id], i)
		byBare[id.WithoutNamespace()] = append(byBare[id.WithoutNamespace()], i)
	}
	// The kinds read with at least one object, by namespace ("" for any).
	present := map[[2]string]bool{}
	for _, l := range lives {
		id := render.IDOf(l.Object)
		k := kube.KindKey(id.Group, id.Kind)
		present[[2]string{k, id.Namespace}], present[[2]string{k, ""}] = true, true
	}
	used := map[int]bool{}
	anyUnowned := false
	notCompared := 0 // ciphertexts of objects without managedFields
	for _, r := range objects {
		id := r.ID.WithoutVersion()
		idx := sameVersion(lives, r, byID[id])
		clusterScoped := false
		switch {
		case len(idx) > 0:
		case id.Namespace == "":
			// The build sets no namespace: the applier's default decides it,
			// so accept the one live object of that name, or the one in
			// the namespace an apply without one lands in.
			c := sameVersion(lives, r, byBare[id])
			namespaces := make([]string, len(c))
			for j, i := range c {
				namespaces[j] = render.IDOf(lives[i].Object).Namespace
			}
			if k := unnamespacedChoice(namespaces); k >= 0 {
				idx = c[k : k+1]
			}
		default:
			// A cluster-scoped kind rendered with a namespace: the API
			// server drops it, so the live object has none.
			if c := inNamespace(lives, sameVersion(lives, r, byBare[id.WithoutNamespace()]), ""); len(c) == 1 {
				idx, clusterScoped = c, true
			}
		}
		if len(idx) != 1 {
			if len(idx) == 0 {
				pr.absent(r, cov, present[[2]string{kube.KindKey(r.ID.Group, r.ID.Kind), r.ID.Namespace}])
				continue
			}
			// Comparing with either could miss the drift of the other, and
			// saying nothing would read as "in sync".
			for _, i := range idx {
				used[i] = true
			}
			pr.refusals = append(pr.refusals, Refusal{Code: CodeRenderMismatch, Object: RefOf(r.Object), File: r.Origin,
				Message: fmt.Sprintf("%d live objects are %s, and which one the render describes cannot be told", len(idx), RefOf(r.Object)),
				Hint:    "give the objects distinct names, or compare them by hand"})
			continue
		}
		used[idx[0]] = true
		l := lives[idx[0]]
		if l.Owner == nil {
			anyUnowned = true
		}
		if clusterScoped {
			l.Object = withNamespace(l.Object, id.Namespace)
		}
		p := pairWith(r, l)
		if l.Owner == nil && !l.MetadataOnly {
			notCompared += p.sealed.Count
		}
		pr.pairs = append(pr.pairs, p)
	}
	for i, l := range lives {
		if !used[i] {
			pr.untracked = append(pr.untracked, RefOf(l.Object))
		}
	}
	pr.notes = append(pr.notes, untrackedNotes(pr.untracked, root)...)
	if anyUnowned {
		pr.notes = append(pr.notes, "live objects came without metadata.managedFields: only the fields the render has were compared")
	}
	switch {
	case notCompared == 1:
		pr.notes = append(pr.notes, "1 encrypted field was not compared: Git holds its SOPS ciphertext, and without metadata.managedFields nothing says whether a person changed it")
	case notCompared > 1:
		pr.notes = append(pr.notes, fmt.Sprintf("%d encrypted fields were not compared: Git holds their SOPS ciphertext, and without metadata.managedFields nothing says whether a person changed them", notCompared))
	}
	return pr
}

// pairWith pairs the rendered object r with its live object l, reduced to
// what a person wants of it; Secret values are redacted on both sides. The
// render is taken as the GitOps tool applies it once SOPS has decrypted
// it, and its ciphertexts compare as equal (sops.go).
func pairWith(r render.Object, l kube.LiveObject) pair {
	decrypted := sops.Without(r.Object)
	ren := jsonvalue.RedactSecret(decrypted)
	obj := l.Object
	if !jsonvalue.IsCanonical(obj) {
		obj = jsonvalue.Normalize(obj).(map[string]any)
	}
	live := jsonvalue.RedactSecret(obj) // read, never written: sops.Seal copies it first
	var sealed sops.Sealing
	unseen := l.Unseen
	if enc := sops.Ciphertexts(decrypted); len(enc) > 0 {
		secret := decrypted["apiVersion"] == "v1" && decrypted["kind"] == "Secret"
		live, sealed = sops.Seal(live, ren, secret, enc, l.Owner)
		unseen, sealed = sops.SealUnseen(unseen, l.UnseenBy, secret, enc, sealed)
	}
	// A value the server allocated is noise unless Git holds one.
	live = noise.DropAllocated(live, ren)
	var wants map[string]any
	var applied []intent.Applied
	inSync := !l.MetadataOnly && intent.Matches(live, ren, l.Owner)
	if inSync {
		wants = ren // the view would equal the render; both are only read
	} else {
		wants, applied = intent.ViewApplied(live, ren, l.Owner)
		if !l.MetadataOnly && len(applied) > 0 && jsonvalue.Equal(wants, ren) {
			// Only the tool's own values differ: nothing of a person's.
			wants, inSync = ren, true
		}
	}
	if l.MetadataOnly {
		// Only metadata was read: everything else stands as rendered.
		body := jsonvalue.Copy(ren).(map[string]any)
		body["metadata"] = wants["metadata"]
		wants = body
	}
	ro := r
	ro.Object = ren
	return pair{ren: ro, live: live, owner: l.Owner, intent: wants, inSync: inSync,
		unseen: unseen, unseenBy: l.UnseenBy, release: l.UnseenRelease, applied: applied, sealed: sealed}
}

// untrackedNotes are the notes on the live objects root does not render:
// one each, or past untrackedNamed one that counts them and names the
// first few.
func untrackedNotes(refs []ObjectRef, root string) []string {
	if len(refs) <= untrackedNamed {
		notes := make([]string, len(refs))
		for i, r := range refs {
			notes[i] = fmt.Sprintf("untracked: %s is in the cluster but %s does not render it", r, root)
		}
		return notes
	}
	named := make([]string, untrackedNamed)
	for i, r := range refs[:untrackedNamed] {
		named[i] = r.String()
	}
	return []string{fmt.Sprintf("untracked: %d objects are in the cluster but %s does not render them, among them %s and %d more (the plan's untracked list names every one)",
		len(refs), root, strings.Join(named, ", "), len(refs)-untrackedNamed)}
}

// defaultNamespace is where an apply puts a namespaced object that names
// no namespace (kubectl's, and so the GitOps tools', default).
const defaultNamespace = "default"

// unnamespacedChoice is which of the live objects of one kind and name, by
// their namespaces, a render without a namespace pairs with: the only one,
// or the one in the namespace an apply without one lands in; -1 for none.
func unnamespacedChoice(namespaces []string) int {
	if len(namespaces) == 1 {
		return 0
	}
	at := -1
	for i, ns := range namespaces {
		if ns == defaultNamespace {
			if at >= 0 {
				return -1
			}
			at = i
		}
	}
	return at
}

// LiveRefOf is the live object, among the refs of those read, that Analyze
// pairs the rendered object ref with: the same object; for a render
// without a namespace, unnamespacedChoice among those of its kind and
// name; for a cluster-scoped kind rendered with a namespace, the one
// object of its kind and name without one (the API server dropped it).
// What reads the live objects by the plan's refs (who changed a field)
// finds them as the plan did. false: none, or several.
func LiveRefOf(ref ObjectRef, live []ObjectRef) (ObjectRef, bool) {
	same := func(l ObjectRef) bool {
		return l.Kind == ref.Kind && l.Name == ref.Name && render.GroupOf(l.APIVersion) == render.GroupOf(ref.APIVersion)
	}
	var named []ObjectRef
	for _, l := range live {
		if !same(l) {
			continue
		}
		if l.Namespace == ref.Namespace {
			return l, true
		}
		named = append(named, l)
	}
	if ref.Namespace == "" {
		namespaces := make([]string, len(named))
		for i, l := range named {
			namespaces[i] = l.Namespace
		}
		if k := unnamespacedChoice(namespaces); k >= 0 {
			return named[k], true
		}
		return ObjectRef{}, false
	}
	var scoped []ObjectRef
	for _, l := range named {
		if l.Namespace == "" {
			scoped = append(scoped, l)
		}
	}
	if len(scoped) == 1 {
		return scoped[0], true
	}
	return ObjectRef{}, false
}

// inNamespace keeps the live objects of idx that are in namespace ns.
func inNamespace(lives []kube.LiveObject, idx []int, ns string) []int {
	var out []int
	for _, i := range idx {
		if render.IDOf(lives[i].Object).Namespace == ns {
			out = append(out, i)
		}
	}
	return out
}

// withNamespace is obj with metadata.namespace set to ns: the namespace the
// render gave a cluster-scoped object, which the API server dropped, so
// that it compares as the render's own.
func withNamespace(obj map[string]any, ns string) map[string]any {
	out := maps.Clone(obj)
	meta, _ := obj["metadata"].(map[string]any)
	meta = maps.Clone(meta)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["namespace"] = ns
	out["metadata"] = meta
	return out
}

// absent reports a rendered object the live objects lack. Only a kind
// read in full, with other objects of it where this one belongs, makes
// that a finding: anything else is a read that fell short, and a plan
// that could not read what it renders gives no verdict at all (Unread),
// since "not there" would read as "drift gone".
func (pr *pairing) absent(r render.Object, cov *kube.Coverage, kindSeen bool) {
	ref := RefOf(r.Object)
	k := kube.KindKey(r.ID.Group, r.ID.Kind)
	switch {
	case cov != nil && cov.Skipped[k]:
		pr.notes = append(pr.notes, fmt.Sprintf("not compared: %s is of a kind this target does not read from the cluster", ref))
	case cov != nil && !cov.Listed[k]:
		why := "the cluster did not list " + k
		if len(cov.Failed) > 0 {
			why += " (" + strings.Join(cov.Failed, "; ") + ")"
		}
		pr.unread = append(pr.unread, fmt.Sprintf("%s: %s", ref, why))
	case !kindSeen:
		pr.unread = append(pr.unread, fmt.Sprintf("%s: no %s at all was read from the cluster there", ref, k))
	default:
		pr.refusals = append(pr.refusals, Refusal{Code: CodeNotInCluster, Object: ref, File: r.Origin,
			Message: "renders from Git but is not in the cluster",
			Hint:    "the GitOps tool has not created it yet, or someone deleted it; driftback never proposes removing it from Git"})
	}
}

// apply adds what pairing found to the plan, in the order it was found.
func (pr *pairing) apply(plan *Plan) {
	plan.Notes = append(plan.Notes, pr.notes...)
	plan.Refusals = append(plan.Refusals, pr.refusals...)
	plan.Unread = append(plan.Unread, pr.unread...)
	plan.Untracked = append(plan.Untracked, pr.untracked...)
}

// unverifiableSecret is the refusal of a Secret whose only difference is
// that a person's manager owns keys of its data (DESIGN §5.4): the values
// are never read, so whether they still differ cannot be told. Putting a
// value back by hand, or the GitOps tool's apply of stringData, leaves
// that ownership in place, so the hint names what clears it: the JSON
// patch that drops the stale claims, guarded so it fails once that manager
// writes again.
func unverifiableSecret(p pair, ref ObjectRef, fields []jsonvalue.Path) Refusal {
	by := "another manager"
	if len(p.unseenBy) > 0 {
		by = strings.Join(p.unseenBy, ", ")
	}
	r := Refusal{
		Code: CodeSensitive, Object: ref, Field: joinPaths(fields), File: p.ren.Origin, CannotTell: true,
		Message: "managedFields say " + by + " set these keys in the cluster; driftback never reads Secret values, so it cannot tell whether they still differ from Git",
		Hint:    "if the value differs, update the Secret's source by hand",
	}
	if p.release != "" {
		ns := ""
		if ref.Namespace != "" {
			ns = " -n " + ref.Namespace
		}
		r.Hint = "once the value is Git's again (putting it back, or the GitOps tool's apply, leaves " + by +
			" owning the keys), release them: kubectl patch secret " + ref.Name + ns + " --type=json -p " + shellQuote(p.release) +
			"; if it differs, update the Secret's source by hand"
	}
	return r
}

// shellQuote quotes s for a POSIX shell: the patch holds manager names
// from the cluster, which are not to be trusted with a person's shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sameVersion narrows the live objects idx (of r's group, kind and name)
// by version: to r's own where the render holds that object at several
// versions, and to r's when several live objects would otherwise match.
func sameVersion(lives []kube.LiveObject, r render.Object, idx []int) []int {
	if r.ID.Version == "" && len(idx) < 2 {
		return idx
	}
	version := r.ID.Version
	if version == "" {
		version = render.VersionOf(render.APIVersionOf(r.Object))
	}
	var out []int
	for _, i := range idx {
		if render.VersionOf(render.APIVersionOf(lives[i].Object)) == version {
			out = append(out, i)
		}
	}
	if r.ID.Version == "" && len(out) == 0 {
		return idx // none at the render's version: still ambiguous, never silently missing
	}
	return out
}

// renderedKinds lists the kinds objs hold, as a read's coverage names
// them (kube.KindKey), sorted.
func renderedKinds(objs []render.Object) []string {
	set := map[string]bool{}
	for _, o := range objs {
		set[kube.KindKey(o.ID.Group, o.ID.Kind)] = true
		if dye.ReplicaKinds[o.ID.Kind] {
			// Whether a replica count nobody owns is a person's depends on
			// whether an autoscaler scales the object: read them too.
			set[kube.KindKey("autoscaling", "HorizontalPodAutoscaler")] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// renderedMetadata is the labels and annotations under keys of each
// rendered object, as {labels: {...}, annotations: {...}}, named as plans
// name the rendered object and, where the live object it is paired with
// is named otherwise (another version, a generated name's other hash), by
// that name too; objects that carry none of the keys are left out.
func renderedMetadata(objs []render.Object, pairs []pair, keys []string) map[ObjectRef]map[string]any {
	if len(keys) == 0 {
		return nil
	}
	out := map[ObjectRef]map[string]any{}
	for _, o := range objs {
		if kept := metadataUnder(o.Object, keys); kept != nil {
			out[RefOf(o.Object)] = kept
		}
	}
	for _, p := range pairs {
		if kept, ok := out[RefOf(p.ren.Object)]; ok && p.live != nil {
			out[RefOf(p.live)] = kept
		}
	}
	return out
}

// metadataUnder is obj's labels and annotations under keys; nil when none.
func metadataUnder(obj map[string]any, keys []string) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	kept := map[string]any{}
	for _, field := range []string{"labels", "annotations"} {
		m, _ := md[field].(map[string]any)
		sub := map[string]any{}
		for _, k := range keys {
			if v, ok := m[k]; ok {
				sub[k] = v
			}
		}
		if len(sub) > 0 {
			kept[field] = sub
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// findPair is the pair of the rendered object id in pairs; nil when none.
func findPair(pairs []pair, id render.ID) *pair {
	for i := range pairs {
		if pairs[i].ren.ID == id {
			return &pairs[i]
		}
	}
	return nil
}

// fidelity is what the pairs say of the render's fidelity: each field
// only the tool's writer wrote differently (intent.Applied), and the
// verdict. Unknown when no paired object came with managedFields, since
// then nothing records who wrote anything.
func fidelity(pairs []pair) Fidelity {
	f := Fidelity{Verdict: FidelityUnknown}
	for _, p := range pairs {
		if p.owner != nil && f.Verdict == FidelityUnknown {
			f.Verdict = FidelityMatch
		}
		for _, ap := range p.applied {
			if marked(ap.Rendered, ap.Live) {
				continue
			}
			t := ToolApplied{Object: RefOf(p.ren.Object), Field: ap.Path.String(), Applied: ap.Live, Rendered: ap.Rendered,
				Writer: strings.Join(ap.Write.Managers, ", "), Cause: ap.Write.Cause, File: p.ren.Origin}
			if isSecret(p.ren.ID) || encrypted(ap.Rendered) || encrypted(ap.Live) || holdsSecret(ap.Rendered) {
				t.Applied, t.Rendered = nil, nil
			}
			f.Fields = append(f.Fields, t)
		}
	}
	if len(f.Fields) > 0 {
		f.Verdict = FidelityDiffers
	}
	return f
}

// marked reports whether a rendered value holds a marker for a value
// driftback does not read or cannot tell (a Flux Secret's variable, an
// Argo CD build value) and live fits the text around it: the tool filled
// it in, which is no gap in the render, and no value of it is shown.
func marked(rendered, live any) bool {
	s, ok := rendered.(string)
	switch {
	case !ok:
		return false
	case gitops.HoldsSecret(s):
		return gitops.FitsSecrets(s, gitops.ScalarText(live))
	case gitops.HoldsUnknown(s):
		return gitops.FitsUnknown(s, gitops.ScalarText(live))
	}
	return false
}

// holdsSecret reports whether a rendered value takes a Flux variable from
// a Secret: its live value is never shown, whatever else it holds.
func holdsSecret(v any) bool {
	s, ok := v.(string)
	return ok && gitops.HoldsSecret(s)
}

// encrypted reports whether v is a SOPS ciphertext, which is never shown.
func encrypted(v any) bool {
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, "ENC[")
}

// holdUnfaithful refuses every change of an object whose own record
// proves driftback's render of it wrong: the tool's last-applied
// configuration holds the live value of a field where driftback renders
// another (kube.CauseRender). An edit built on that render could write
// anything, so the object's changes wait, named, until the renders agree.
// A field the tool wrote for another reason (the API server, a webhook),
// or where the record cannot tell, holds nothing back: each other edit is
// still re-rendered and verified on its own.
func holdUnfaithful(pairs []pair, refuse func(Refusal)) {
	for i := range pairs {
		p := &pairs[i]
		if p.inSync {
			continue
		}
		var proof []string
		for _, ap := range p.applied {
			if ap.Write.Cause == kube.CauseRender {
				proof = append(proof, ap.Path.String())
			}
		}
		if len(proof) == 0 {
			continue
		}
		refuse(Refusal{Code: CodeRenderMismatch, Object: RefOf(p.ren.Object), Field: proof[0], File: p.ren.Origin,
			Message: fmt.Sprintf("the GitOps tool's last-applied configuration holds the live value of %s, where driftback renders another: its render of this object is not the tool's, so none of the object's changes is proposed",
				strings.Join(proof, ", ")),
			Hint: "make driftback render as the tool does (the tool's kustomize version and build options), or edit Git by hand; docs/field-ownership.md"})
		p.intent, p.inSync = p.ren.Object, true
	}
}
