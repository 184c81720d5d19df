package enforce

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/cluster"
)

// The other road (issue 33): for every object the body names, how to put
// the cluster back to what Git says instead of changing Git. Only
// commands that apply Git's own state are given — the GitOps tool's
// reconcile or sync, or a server-side apply of the root as Git renders it
// — never a value driftback would have to write itself. Where no command
// does that exactly (a field the tool ignores, an object that opts out of
// it, a field Git lacks that an apply leaves in place), the body says so
// and names the object to change by hand.

// maxArgoResources bounds the --resource flags of one sync command; past
// it the whole Application is synced, which restores these objects too.
const maxArgoResources = 20

// maxCommand and maxListedObjects keep a note whole: the body cuts longer
// text short, and a command cut short must never be shown.
const (
	maxCommand       = 1500
	maxListedObjects = 300
)

// drifted is one field the body names: an edit, declined or not, or a
// refusal. inGit is whether Git's render has it, as far as driftback
// knows (a refusal is assumed not to: no command is then promised to
// remove a field it cannot see).
type drifted struct {
	ref   analyzer.ObjectRef
	field string
	inGit bool
	// missing: the object is in Git and not in the cluster (not-in-cluster);
	// the tool's apply creates it.
	missing bool
}

// RestoreInput is what the notes on restoring the cluster are written
// from: the plan, the rows a reviewer declined, how the GitOps tool treats
// drift, and where the target's Git lives.
type RestoreInput struct {
	Plan        *analyzer.Plan
	Declined    []report.EditRow
	Enforcement *cluster.Enforcement // nil: no tool read
	Objects     []cluster.Object     // the live objects read
	Web         string               // GitHub's web address
	Owner, Repo string
	BaseSHA     string // the base head
	Root        string // the target's root
}

// RestoreNotes says how to restore the cluster instead, one note per tool
// (or per field the tool cannot restore), for the plan's edits and
// refusals and the declined rows.
func RestoreNotes(in RestoreInput) []report.ToolNote {
	plan := in.Plan
	if plan == nil {
		return nil
	}
	var fields []drifted
	for _, e := range plan.Edits {
		fields = append(fields, drifted{ref: e.Object, field: e.Field, inGit: e.From != nil})
	}
	for _, r := range in.Declined {
		for _, e := range r.Edits {
			fields = append(fields, drifted{ref: e.Object, field: e.Field, inGit: e.From != nil})
		}
	}
	for _, r := range plan.Refusals {
		if r.Object.Kind != "" {
			fields = append(fields, drifted{r.Object, r.Field, false, r.Code == analyzer.CodeNotInCluster})
		}
	}
	if len(fields) == 0 {
		return nil
	}
	switch {
	case in.Enforcement == nil && plan.HelmRelease:
		return releaseRestore(in, fields)
	case in.Enforcement == nil:
		return []report.ToolNote{plainRestore(in)}
	}
	return toolRestore(in.Enforcement, indexLive(in.Objects), plan.Metadata, fields)
}

// toolRestore is the tool's command for the objects it restores, and a
// note for each field it does not.
func toolRestore(e *cluster.Enforcement, live liveIndex, git map[analyzer.ObjectRef]map[string]any, fields []drifted) []report.ToolNote {
	covered := map[analyzer.ObjectRef]bool{}
	var byHand []report.ToolNote
	for _, f := range fields {
		o, ok := live[f.ref]
		applies, why := false, "the live object was not read"
		switch {
		case f.missing:
			applies, why = e.Applies(cluster.Object{Object: map[string]any{}}, git[f.ref], "metadata", true)
		case ok:
			applies, why = e.Applies(o, git[f.ref], f.field, f.inGit)
		}
		if applies {
			covered[f.ref] = true
			continue
		}
		byHand = appendByHand(byHand, f, why, ok)
	}
	var notes []report.ToolNote
	if len(covered) > 0 {
		notes = append(notes, toolCommand(e, covered))
	}
	return append(notes, byHand...)
}

// appendByHand adds to notes the field f to change by hand, for the reason
// why; read is whether its live object was read. Past maxToolNotes one
// note says there are more.
func appendByHand(notes []report.ToolNote, f drifted, why string, read bool) []report.ToolNote {
	if len(notes) == maxToolNotes {
		return append(notes, report.ToolNote{Text: "…and more fields to change by hand"})
	}
	if len(notes) > maxToolNotes {
		return notes
	}
	n := report.ToolNote{Object: f.ref.String(), Field: f.field,
		Text: "no command applies exactly Git's value here (" + why + "); change it by hand:", Command: editCommand(f.ref)}
	if f.missing || !read {
		n.Text, n.Command = "no command applies exactly Git's state of this object here ("+why+"); apply it from Git by hand", ""
	}
	return append(notes, n)
}

// releaseRestore is the road for a HelmRelease root no GitOps tool is read
// for: kubectl cannot apply what Helm renders from the release's values,
// and driftback names no Helm upgrade it has not seen put every field
// back, so each field is changed by hand.
func releaseRestore(in RestoreInput, fields []drifted) []report.ToolNote {
	live := indexLive(in.Objects)
	why := "driftback reads no GitOps tool for this target, and kubectl cannot apply what Helm renders from the HelmRelease " + in.Root
	var notes []report.ToolNote
	for _, f := range fields {
		_, read := live[f.ref]
		notes = appendByHand(notes, f, why, read)
	}
	return notes
}

// toolCommand makes the tool apply Git to the covered objects.
func toolCommand(e *cluster.Enforcement, covered map[analyzer.ObjectRef]bool) report.ToolNote {
	refs := make([]analyzer.ObjectRef, 0, len(covered))
	for r := range covered {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.String()
	}
	objects := strings.Join(names, ", ")
	if len(names) > maxArgoResources || len(objects) > maxListedObjects {
		objects = fmt.Sprintf("the %d objects named above", len(names))
	}
	switch {
	case e.Suspended:
		return report.ToolNote{Text: fmt.Sprintf("%s is suspended. Resuming it applies the revision its source holds now to every object it manages, "+
			"putting Git's values back in %s (and keeps applying Git from then on):", e.Object, objects), Command: e.Resume}
	case e.Tool == "Argo CD":
		cmd := e.Restore
		scoped, whole := cmd, false
		for _, r := range refs {
			// argocd splits the flag at ':' into exactly three parts: a
			// name holding one (system:… RBAC objects) cannot be named.
			whole = whole || strings.Contains(r.Name, ":") || strings.Contains(r.Namespace, ":")
			scoped += " --resource " + shellWord(argoResource(r))
		}
		if !whole && len(refs) <= maxArgoResources && len(scoped) <= maxCommand {
			cmd = scoped // else the whole Application, which restores these too
		}
		return report.ToolNote{Text: fmt.Sprintf("%s syncs to its target revision, putting Git's values back in %s:", e.Object, objects), Command: cmd}
	}
	return report.ToolNote{Text: fmt.Sprintf("%s applies the revision its source holds now to every object it manages, "+
		"putting Git's values back in %s:", e.Object, objects), Command: e.Restore}
}

// argoResource names an object as `argocd app sync --resource` takes it:
// GROUP:KIND:NAMESPACE/NAME (GROUP empty for the core group).
func argoResource(r analyzer.ObjectRef) string {
	name := r.Name
	if r.Namespace != "" {
		name = r.Namespace + "/" + r.Name
	}
	return groupOf(r.APIVersion) + ":" + r.Kind + ":" + name
}

func groupOf(apiVersion string) string {
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// editCommand opens the live object in an editor.
func editCommand(r analyzer.ObjectRef) string {
	res := strings.ToLower(r.Kind)
	if g := groupOf(r.APIVersion); g != "" {
		res += "." + g
	}
	cmd := "kubectl"
	if r.Namespace != "" {
		cmd += " -n " + shellWord(r.Namespace)
	}
	return cmd + " edit " + shellWord(res+"/"+r.Name)
}

// plainWord is what a shell takes as one literal word as it is.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9._/:=@+,-]+$`)

// shellWord makes s one literal word for a POSIX shell. A name need not be
// a DNS name — the API server checks some kinds' names only as a path
// segment (RBAC: "$(…)" passes), and an object Git renders but the
// cluster lacks was checked by no one — and a command a person pastes
// must not run what a name says.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fromCheckout is the road when the root cannot be named to kubectl
// safely in one line.
func fromCheckout(in RestoreInput) report.ToolNote {
	return report.ToolNote{Text: fmt.Sprintf("driftback reads no GitOps tool for this target: from a checkout of the base head %s, "+
		"a server-side apply of what %s renders (kubectl apply --server-side --force-conflicts -k) puts Git's values back.", githubapi.ShortSHA(in.BaseSHA), in.Root)}
}

// safeRoot admits a root path kubectl can be given in a quoted URL as is.
var safeRoot = regexp.MustCompile(`^[A-Za-z0-9._/-]*$`)

// plainRestore is the road for a target no GitOps tool is read for: a
// server-side apply of the root as Git renders it at the base head,
// fetched by kubectl itself (kustomize's remote form), so no checkout at
// any path is assumed. It applies every object the root renders: kubectl
// has no way to apply one object of a build, and Git's state of the others
// is what they hold already or what they should.
func plainRestore(in RestoreInput) report.ToolNote {
	root := strings.Trim(in.Root, "/")
	if !safeRoot.MatchString(root) || strings.Contains(root, "..") || in.BaseSHA == "" {
		return fromCheckout(in)
	}
	src := fmt.Sprintf("%s/%s/%s.git", in.Web, in.Owner, in.Repo)
	if root != "" && root != "." {
		src += "//" + root
	}
	src += "?ref=" + in.BaseSHA
	if len(src) > maxCommand-100 {
		return fromCheckout(in)
	}
	return report.ToolNote{Text: "driftback reads no GitOps tool for this target. A server-side apply of " + in.Root +
		" as Git renders it at the base head (kubectl fetches it with git) puts Git's values back in every object it renders; " +
		"a field Git lacks stays unless kubectl's apply owned it, so remove such a field by hand:",
		Command: "kubectl apply --server-side --force-conflicts -k '" + src + "'"}
}
