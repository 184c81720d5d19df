package checks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/config"
)

// Result is one check run's content.
type Result struct {
	Conclusion  string // success, neutral or failure
	Title       string
	Summary     string
	Annotations []*github.CheckRunAnnotation
	// RefusalMarks is how many of Annotations, first, are refusals; the
	// rest are notices of who changed each edit's field, which belong to
	// the base head only.
	RefusalMarks int
	// core is the summary ResultOf rendered, and bare and bareMessages
	// the same and the annotations' messages without the users behind
	// the writes (Notes.Bare): the run's identity (ContentID) reads them,
	// so a replica that knows more or less of who — after a restart, or
	// taking the target over — posts no new run for the same change.
	core, bare   string
	bareMessages []string
}

// GitHub takes at most 50 annotations per request.
const annotationsPerRequest = 50

// ResultOf turns a plan into the check run for the base head (DESIGN §11):
// success when in sync, neutral when drift is proposed, failure (or
// neutral, by configuration) when something was refused.
func ResultOf(plan *analyzer.Plan, tc config.Target, g Notes) Result {
	r := Result{Summary: report.Markdown(plan, report.MarkdownOptions{Target: tc.Name, GitOps: g.Notes, Restoring: g.Restoring, Declined: g.Declined, ChangedBy: g.ChangedBy})}
	unsure := cannotTell(plan)
	switch {
	case unsure > 0 && unsure == len(plan.Refusals) && len(plan.Edits) == 0:
		// Ownership of a value never read is the only evidence (a Secret's
		// data key): no verdict either way (DESIGN §5.4).
		r.Conclusion, r.Title = "neutral", fmt.Sprintf("driftback cannot tell whether %d Secret change(s) still differ from Git", unsure)
	case len(plan.Refusals) > unsure:
		r.Conclusion, r.Title = "failure", fmt.Sprintf("%d change(s) driftback cannot place", len(plan.Refusals))
		if tc.FailOnRefusal != nil && !*tc.FailOnRefusal {
			r.Conclusion = "neutral"
		}
	case len(plan.Edits) > 0:
		r.Conclusion, r.Title = "neutral", fmt.Sprintf("The cluster differs from Git: %d edit(s) proposed", len(plan.Edits))
	case len(g.Declined) > 0:
		// Not success: the cluster still differs from Git, by a reviewer's
		// choice.
		r.Conclusion, r.Title = "neutral", fmt.Sprintf("The cluster differs from Git: %d edit(s) declined in review", prbody.EditsOf(g.Declined))
	case g.Restoring > 0:
		// Not success: the cluster differs from Git until the tool acts.
		r.Conclusion, r.Title = "neutral", fmt.Sprintf("%s will restore %d drifted field(s)", g.Tool, g.Restoring)
	case plan.Fidelity.Verdict == analyzer.FidelityDiffers:
		// No person's change, but driftback's render is not what the tool
		// applied: "matches Git" would claim more than anyone knows.
		r.Conclusion, r.Title = "neutral", fmt.Sprintf("No change by a person; driftback's render differs from what the GitOps tool applied in %d field(s)", len(plan.Fidelity.Fields))
	default:
		r.Conclusion, r.Title = "success", "The cluster matches Git"
	}
	for _, ref := range plan.Refusals {
		if ref.File == "" {
			continue
		}
		level := "failure"
		if ref.CannotTell {
			level = "warning"
		}
		r.Annotations = append(r.Annotations, lineAnnotation(ref.File, ref.Line, level,
			ref.Code+": "+githubapi.Truncate(ref.Field, 200), ref.Message+"\nHow to fix: "+ref.Hint))
	}
	r.RefusalMarks = len(r.Annotations)
	r.Annotations = append(r.Annotations, editAnnotations(plan, g.ChangedBy)...)
	if g.Bare != nil {
		bare := g
		bare.ChangedBy, bare.Bare = g.Bare, nil
		b := ResultOf(plan, tc, bare)
		if len(b.Annotations) == len(r.Annotations) {
			r.core, r.bare = r.Summary, b.Summary
			for _, a := range b.Annotations {
				r.bareMessages = append(r.bareMessages, a.GetMessage())
			}
		}
	}
	return r
}

// editAnnotations put who changed each proposed edit's field on the line
// the edit writes, where both are known: a notice, not a failure.
func editAnnotations(plan *analyzer.Plan, changedBy func(analyzer.Edit) string) []*github.CheckRunAnnotation {
	var out []*github.CheckRunAnnotation
	for _, e := range plan.Edits {
		if e.File == "" || changedBy == nil {
			continue
		}
		who := changedBy(e)
		if who == "" {
			continue
		}
		out = append(out, lineAnnotation(e.File, e.Line, "notice",
			githubapi.Truncate(fmt.Sprintf("Changed in the cluster: %s %s", e.Object, e.Field), 255),
			fmt.Sprintf("%s → %s\nChanged by %s", report.PlainValue(e.From), report.PlainValue(e.To), who)))
	}
	return out
}

// lineAnnotation marks one line of file (the first when line is unknown)
// at level, its message cut to what GitHub takes.
func lineAnnotation(file string, line int, level, title, message string) *github.CheckRunAnnotation {
	line = max(line, 1)
	return &github.CheckRunAnnotation{
		Path: github.String(file), StartLine: github.Int(line), EndLine: github.Int(line),
		AnnotationLevel: github.String(level), Title: github.String(title), Message: github.String(githubapi.Truncate(message, 4000)),
	}
}

// cannotTell counts the refusals driftback cannot verify: they fail no
// check.
func cannotTell(plan *analyzer.Plan) int {
	n := 0
	for _, r := range plan.Refusals {
		if r.CannotTell {
			n++
		}
	}
	return n
}

// Notes is what the check run says besides the plan: of the GitOps tool,
// the reviewer's declines, and who changed each field.
type Notes struct {
	Tool      string
	Notes     []report.ToolNote
	Restoring int
	Declined  []report.EditRow // the rows a reviewer declined: drift the plan leaves out
	// ChangedBy says who changed each edit's field.
	ChangedBy func(analyzer.Edit) string
	// Bare says it without the users (the field managers only): what
	// names the run's content.
	Bare func(analyzer.Edit) string
}

// Poster posts one poll's check runs: this installation's runs of the
// target's check, on the commits of its place.
type Poster struct {
	App   *app.App
	Place app.Place
	// Rerun is a commit whose check run someone asked to run again: posted
	// anew even if unchanged.
	Rerun string
	// Name is the runs' name; "" is the target's check (App.CheckName).
	Name string
}

// name is the name of the runs c posts.
func (c Poster) name() string {
	if c.Name != "" {
		return c.Name
	}
	return c.App.CheckName(c.Place.Target)
}

// PostFor posts the plan's result on the base head, and on the PR head a
// success: that commit renders to what the cluster runs (but for the
// declinedEdits a reviewer unticked).
func (c Poster) PostFor(ctx context.Context, shas []string, res Result, declinedEdits int) (int, error) {
	n := 0
	for _, sha := range shas {
		r := res
		if sha != c.Place.BaseSHA {
			r = Result{Conclusion: "success", Title: "This branch matches the cluster", Summary: res.Summary, core: res.core, bare: res.bare}
			if n := declinedEdits; n > 0 {
				r.Title = fmt.Sprintf("This branch matches the cluster but for %d declined edit(s)", n)
			}
			// A refusal the branch cannot fix fails it too; the notices of
			// who changed what point at the base's lines and stay there.
			if res.RefusalMarks > 0 {
				r.Conclusion, r.Title, r.Annotations = res.Conclusion, res.Title, res.Annotations[:res.RefusalMarks]
				r.RefusalMarks = res.RefusalMarks
				r.bareMessages = res.bareMessages[:min(len(res.bareMessages), res.RefusalMarks)]
			}
		}
		k, err := c.Post(ctx, []string{sha}, r)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Post posts the target's check run on each commit when its content
// changed (a hash in external_id says). A changed result is a new run,
// never an update (nor is a run someone asked to run again, even
// unchanged: the Re-run button expects a new run): GitHub appends the annotations of every update to a
// run, so an updated run would keep stale ones, and GitHub shows the
// newest run of a name. Only this App's runs are read.
func (c Poster) Post(ctx context.Context, shas []string, r Result) (int, error) {
	if c.App.ID == 0 {
		return 0, errors.New("bot: Options.AppID is not set; without it the bot cannot tell its check runs from another App's")
	}
	summary := githubapi.Truncate(r.Summary, report.DefaultMaxBytes-1)
	id := c.runID(r)
	n := 0
	for _, sha := range shas {
		latest, err := c.latestRun(ctx, sha)
		if err != nil {
			return n, err
		}
		var runID int64
		done := 0 // annotations already on the run
		if latest != nil && latest.GetExternalID() == id && sha != c.Rerun {
			// Unchanged; an earlier poll may have stopped between batches.
			done = latest.GetOutput().GetAnnotationsCount()
			if done >= len(r.Annotations) {
				continue
			}
			runID = latest.GetID()
		} else {
			cr, err := c.createRun(ctx, sha, r, summary, id)
			if err != nil {
				return n, err
			}
			runID, done = cr.GetID(), cr.GetOutput().GetAnnotationsCount()
		}
		for tries := 0; done < len(r.Annotations); {
			batch := r.Annotations[done:min(done+annotationsPerRequest, len(r.Annotations))]
			_, _, err := c.App.GitHub.Checks.UpdateCheckRun(ctx, c.Place.Owner, c.Place.Repo, runID, github.UpdateCheckRunOptions{
				Name: c.name(), Output: &github.CheckRunOutput{Title: github.String(r.Title), Summary: github.String(summary), Annotations: batch},
			})
			if err == nil {
				done, tries = done+len(batch), 0
				continue
			}
			if tries++; tries > 1 || !githubapi.UnknownOutcome(ctx, err) {
				return n, fmt.Errorf("annotate check run on %s: %w", githubapi.ShortSHA(sha), err)
			}
			// The answer was lost; the run's count says whether the batch
			// landed (an update appends, so it is not sent twice blindly).
			cr, _, gerr := c.App.GitHub.Checks.GetCheckRun(ctx, c.Place.Owner, c.Place.Repo, runID)
			if gerr != nil {
				return n, fmt.Errorf("annotate check run on %s: %w (and reading it back: %v)", githubapi.ShortSHA(sha), err, gerr)
			}
			done = cr.GetOutput().GetAnnotationsCount()
		}
		n++
	}
	return n, nil
}

// latestRun is the newest run of the target's check that this App made on
// sha, nil if none.
func (c Poster) latestRun(ctx context.Context, sha string) (*github.CheckRun, error) {
	name := c.name()
	list, _, err := c.App.GitHub.Checks.ListCheckRunsForRef(ctx, c.Place.Owner, c.Place.Repo, sha, &github.ListCheckRunsOptions{
		CheckName: github.String(name), AppID: github.Int64(c.App.ID), Filter: github.String("latest")})
	if err != nil {
		return nil, fmt.Errorf("check runs of %s: %w", githubapi.ShortSHA(sha), err)
	}
	var latest *github.CheckRun
	for _, cr := range list.CheckRuns {
		if cr.GetName() == name && cr.GetApp().GetID() == c.App.ID && (latest == nil || cr.GetID() > latest.GetID()) {
			latest = cr
		}
	}
	return latest, nil
}

// createRun creates a completed run with the first batch of annotations.
// When the answer is lost it looks for the run (by this App, name and
// external_id) before trying once more.
func (c Poster) createRun(ctx context.Context, sha string, r Result, summary, id string) (*github.CheckRun, error) {
	create := func() (*github.CheckRun, error) {
		cr, _, err := c.App.GitHub.Checks.CreateCheckRun(ctx, c.Place.Owner, c.Place.Repo, github.CreateCheckRunOptions{
			Name: c.name(), HeadSHA: sha, Status: github.String("completed"), Conclusion: github.String(r.Conclusion),
			ExternalID: github.String(id),
			Output: &github.CheckRunOutput{Title: github.String(r.Title), Summary: github.String(summary),
				Annotations: r.Annotations[:min(annotationsPerRequest, len(r.Annotations))]},
		})
		return cr, err
	}
	cr, err := create()
	if err == nil {
		return cr, nil
	}
	if !githubapi.UnknownOutcome(ctx, err) {
		return nil, fmt.Errorf("create check run on %s: %w", githubapi.ShortSHA(sha), err)
	}
	if latest, lerr := c.latestRun(ctx, sha); lerr == nil && latest != nil && latest.GetExternalID() == id {
		return latest, nil
	}
	if cr, err = create(); err != nil {
		return nil, fmt.Errorf("create check run on %s: %w", githubapi.ShortSHA(sha), err)
	}
	return cr, nil
}

// runID is the external_id of a run with r's content, stamped with the
// instance: "driftback-HASH" for the default one, "driftback-NAME-HASH"
// for another.
func (c Poster) runID(r Result) string {
	if s := c.App.Stamp(); s != "" {
		return "driftback-" + s + "-" + strings.TrimPrefix(ContentID(r), "driftback-")
	}
	return ContentID(r)
}

// ContentID names r's content, without who made each change where
// ResultOf knew it (Result.bare): what a new run is posted for.
func ContentID(r Result) string {
	summary := r.Summary
	if r.core != "" {
		// RefusedMove and a poll's note add text around the summary.
		summary = strings.Replace(summary, r.core, r.bare, 1)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", r.Conclusion, r.Title, summary)
	for i, a := range r.Annotations {
		msg := a.GetMessage()
		if i < len(r.bareMessages) {
			msg = r.bareMessages[i]
		}
		fmt.Fprintf(h, "%s:%d:%s:%s\x00", a.GetPath(), a.GetStartLine(), a.GetTitle(), msg)
	}
	return "driftback-" + hex.EncodeToString(h.Sum(nil))[:20]
}

// RefusedMove is the check run that reports GitHub's refusal to move the
// pull request's branch on the base head, the plan's report under it.
func RefusedMove(plan Result, branch, reason, hint string) Result {
	plan.Conclusion = "failure"
	plan.Title = "GitHub refused to update " + branch
	plan.Summary = fmt.Sprintf("**GitHub refused to update `%s`:** %s\n\n%s\n\n%s", branch, reason, hint, plan.Summary)
	return plan
}
