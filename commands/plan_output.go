package commands

import (
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/attribution"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/repofs"
)

// planFormats are the values of plan -o.
var planFormats = []string{"text", "json", "yaml", "markdown", "patch"}

// print shows the plan as -o asks. A patch holds edits only, so what is
// refused goes to standard error, where a person still sees it and the
// patch stays one that git apply takes.
func (o *planOptions) print(cmd *cobra.Command, plan *analyzer.Plan, repo *repofs.Repo, md report.MarkdownOptions, who *attribution.Attribution, built bool) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if o.collect != nil && (o.output == "json" || o.output == "yaml") {
		o.collect(newPlanDocument(plan, who), "")
		return nil
	}
	if o.output != "patch" {
		if err := printPlan(stdout, plan, o.output, repo, md, who); err != nil || !o.showUntracked || o.output != "text" {
			return err
		}
		for _, u := range plan.Untracked {
			if _, err := fmt.Fprintf(stdout, "untracked: %s\n", oneLine(u.String())); err != nil {
				return err
			}
		}
		return nil
	}
	if !built {
		return nil // no patch, and the error names the refusals
	}
	var err error
	if argv := externalDiff(); argv != nil {
		err = runExternalDiff(cmd.Context(), argv, diffInput{plan: plan, old: repo.File, stdout: stdout, stderr: stderr})
	} else {
		err = printPlan(stdout, plan, o.output, repo, md, who)
	}
	if err == nil && len(plan.Refusals) > 0 {
		_, err = io.WriteString(stderr, report.TextChangedBy(&analyzer.Plan{Root: plan.Root, Refusals: plan.Refusals}, md.ChangedBy))
	}
	return err
}

func printPlan(w io.Writer, plan *analyzer.Plan, format string, repo *repofs.Repo, md report.MarkdownOptions, who *attribution.Attribution) error {
	var s string
	switch format {
	case "json", "yaml":
		return printDocument(w, newPlanDocument(plan, who), format)
	case "markdown":
		s = report.Markdown(plan, md)
	case "patch":
		s = report.Patch(plan, repo.File)
	default:
		s = report.TextChangedBy(plan, md.ChangedBy)
	}
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	_, err := io.WriteString(w, s)
	return err
}

// planDocument is the plan -o json and -o yaml print: analyzer.Plan's
// fields in its order, each edit and refused field with who changed it in
// the cluster, as markdown's "changed by" says (TestPlanDocumentHasEveryPlanField
// keeps the two in step).
type planDocument struct {
	Root      string               `json:"root"`
	Edits     []editDocument       `json:"edits"`
	Refusals  []refusalDocument    `json:"refusals"`
	Files     []analyzer.File      `json:"files"`
	Notes     []string             `json:"notes"`
	Fidelity  analyzer.Fidelity    `json:"fidelity,omitzero"`
	Unread    []string             `json:"unread,omitempty"`
	Untracked []analyzer.ObjectRef `json:"untracked,omitempty"`
}

type editDocument struct {
	analyzer.Edit
	ChangedBy []cluster.Writer `json:"changedBy,omitempty"`
}

type refusalDocument struct {
	analyzer.Refusal
	ChangedBy []cluster.Writer `json:"changedBy,omitempty"`
}

// newPlanDocument is plan with who changed what (who may be nil).
func newPlanDocument(plan *analyzer.Plan, who *attribution.Attribution) *planDocument {
	d := &planDocument{Root: plan.Root, Edits: []editDocument{}, Refusals: []refusalDocument{}, Files: plan.Files,
		Notes: plan.Notes, Fidelity: plan.Fidelity, Unread: plan.Unread, Untracked: plan.Untracked}
	for _, e := range plan.Edits {
		d.Edits = append(d.Edits, editDocument{Edit: e, ChangedBy: who.Writers(e)})
	}
	for _, r := range plan.Refusals {
		var by []cluster.Writer
		if r.Field != "" {
			by = who.Writers(r.Subject())
		}
		d.Refusals = append(d.Refusals, refusalDocument{Refusal: r, ChangedBy: by})
	}
	if d.Files == nil {
		d.Files = []analyzer.File{}
	}
	if d.Notes == nil {
		d.Notes = []string{}
	}
	return d
}

// rootBuilt tells a plan of a rendered root from one that names a broken
// repository instead: kustomize's build failed, a file the root names is
// not there, or the kustomizations form a cycle (which kustomize refuses
// to build). Nothing was compared, and that is an error (exit 2), not
// drift. A root refused for what driftback will not follow but kustomize
// would build (a remote base not mapped, a path that leaves the
// repository, a symlink) is a refusal by name like any other: exit 1.
func rootBuilt(plan *analyzer.Plan) bool {
	if len(plan.Kinds) > 0 || len(plan.Edits) > 0 {
		return true
	}
	for _, r := range plan.Refusals {
		if r.Code == analyzer.CodeRenderFailed || r.Code == analyzer.CodeUnsupported &&
			(strings.HasSuffix(r.Field, " (missing)") || strings.HasSuffix(r.Field, " (cycle)")) {
			return false
		}
	}
	return true
}

// buildError is the error of a root that did not build: its refusals on
// one line, each with where and how to fix it.
func buildError(plan *analyzer.Plan) error {
	var why []string
	for _, r := range plan.Refusals {
		var parts []string
		if r.File != "" && r.Line > 0 {
			parts = append(parts, fmt.Sprintf("%s:%d", r.File, r.Line))
		} else if r.File != "" {
			parts = append(parts, r.File)
		}
		if r.Field != "" {
			parts = append(parts, r.Field)
		}
		s := strings.Join(append(parts, r.Message), ": ")
		if r.Hint != "" {
			s += " (" + r.Hint + ")"
		}
		why = append(why, oneLine(s))
	}
	return fmt.Errorf("driftback cannot build the root %s, so nothing was compared: %s", oneLine(plan.Root), strings.Join(why, "; "))
}

// oneLine keeps a repository's text (file names, kustomize's messages) to
// one line of printable characters.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s), unicode.IsSpace), " ")
}

// targetCompletions are the target names of the --config file, for shell
// completion of --target; none when the file does not load.
func targetCompletions(file string) []cobra.Completion {
	if file == "" {
		return nil
	}
	cfg, err := config.Load(file)
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, t := range cfg.ResolvedTargets() {
		out = append(out, cobra.CompletionWithDesc(t.Name, t.Repo+" "+t.Root))
	}
	return out
}
