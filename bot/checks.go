package bot

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
	"github.com/driftback/driftback/bot/enforce"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/config"
)

// checkResult is one check run's content.
type checkResult struct {
	conclusion  string // success, neutral or failure
	title       string
	summary     string
	annotations []*github.CheckRunAnnotation
	// refusalMarks is how many of annotations, first, are refusals; the
	// rest are notices of who changed each edit's field, which belong to
	// the base head only.
	refusalMarks int
}

// GitHub takes at most 50 annotations per request.
const annotationsPerRequest = 50

// resultOf turns a plan into the check run for the base head (DESIGN §11):
// success when in sync, neutral when drift is proposed, failure (or
// neutral, by configuration) when something was refused.
func resultOf(plan *analyzer.Plan, tc config.Target, g gitOpsNotes) checkResult {
	r := checkResult{summary: report.Markdown(plan, report.MarkdownOptions{Target: tc.Name, GitOps: g.notes, Restoring: g.restoring, Declined: g.declined, ChangedBy: g.changedBy})}
	unsure := cannotTell(plan)
	switch {
	case unsure > 0 && unsure == len(plan.Refusals) && len(plan.Edits) == 0:
		// Ownership of a value never read is the only evidence (a Secret's
		// data key): no verdict either way (DESIGN §5.4).
		r.conclusion, r.title = "neutral", fmt.Sprintf("driftback cannot tell whether %d Secret change(s) still differ from Git", unsure)
	case len(plan.Refusals) > unsure:
		r.conclusion, r.title = "failure", fmt.Sprintf("%d change(s) driftback cannot place", len(plan.Refusals))
		if tc.FailOnRefusal != nil && !*tc.FailOnRefusal {
			r.conclusion = "neutral"
		}
	case len(plan.Edits) > 0:
		r.conclusion, r.title = "neutral", fmt.Sprintf("The cluster differs from Git: %d edit(s) proposed", len(plan.Edits))
	case len(g.declined) > 0:
		// Not success: the cluster still differs from Git, by a reviewer's
		// choice.
		r.conclusion, r.title = "neutral", fmt.Sprintf("The cluster differs from Git: %d edit(s) declined in review", editsOf(g.declined))
	case g.restoring > 0:
		// Not success: the cluster differs from Git until the tool acts.
		r.conclusion, r.title = "neutral", fmt.Sprintf("%s will restore %d drifted field(s)", g.tool, g.restoring)
	default:
		r.conclusion, r.title = "success", "The cluster matches Git"
	}
	for _, ref := range plan.Refusals {
		if ref.File == "" {
			continue
		}
		level := "failure"
		if ref.CannotTell {
			level = "warning"
		}
		r.annotations = append(r.annotations, lineAnnotation(ref.File, ref.Line, level,
			ref.Code+": "+githubapi.Truncate(ref.Field, 200), ref.Message+"\nHow to fix: "+ref.Hint))
	}
	r.refusalMarks = len(r.annotations)
	r.annotations = append(r.annotations, editAnnotations(plan, g.changedBy)...)
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

// gitOpsNotes is what the check run says of the GitOps tool.
type gitOpsNotes struct {
	tool      string
	notes     []report.ToolNote
	restoring int
	declined  []report.EditRow // the rows a reviewer declined: drift the plan leaves out
	// changedBy says who changed each edit's field (ChangedBy).
	changedBy func(analyzer.Edit) string
}

// editsOf counts the edits of rows.
func editsOf(rows []report.EditRow) int {
	n := 0
	for _, r := range rows {
		n += len(r.Edits)
	}
	return n
}

// checkNotes are the poll's GitOps notes for the check run, with the
// estimated time of the tool's next reconcile.
func (p *poll) checkNotes(plan *analyzer.Plan) gitOpsNotes {
	var declined []report.EditRow
	if p.Review != nil {
		declined = p.Review.declined
	}
	if p.Enforcement == nil {
		return gitOpsNotes{declined: declined, changedBy: p.Attribution.Text}
	}
	return gitOpsNotes{tool: p.Enforcement.Tool, notes: enforce.Notes(p.Enforcement, p.Objs, plan, p.Restoring, true), restoring: len(p.Restoring),
		declined: declined, changedBy: p.Attribution.Text}
}

// postChecksFor posts the plan's result on the base head, and on the PR
// head a success: that commit renders to what the cluster runs.
func (b *Bot) postChecksFor(ctx context.Context, p *poll, shas []string, res checkResult) (int, error) {
	n := 0
	for _, sha := range shas {
		r := res
		if sha != p.BaseSHA {
			r = checkResult{conclusion: "success", title: "This branch matches the cluster", summary: res.summary}
			if n := p.Review.declinedEdits(); n > 0 {
				r.title = fmt.Sprintf("This branch matches the cluster but for %d declined edit(s)", n)
			}
			// A refusal the branch cannot fix fails it too; the notices of
			// who changed what point at the base's lines and stay there.
			if res.refusalMarks > 0 {
				r.conclusion, r.title, r.annotations = res.conclusion, res.title, res.annotations[:res.refusalMarks]
				r.refusalMarks = res.refusalMarks
			}
		}
		k, err := b.postChecks(ctx, p, []string{sha}, r)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// postChecks posts the target's check run on each commit when its content
// changed (a hash in external_id says). A changed result is a new run,
// never an update (nor is a run someone asked to run again, even
// unchanged: the Re-run button expects a new run): GitHub appends the annotations of every update to a
// run, so an updated run would keep stale ones, and GitHub shows the
// newest run of a name. Only this App's runs are read.
func (b *Bot) postChecks(ctx context.Context, p *poll, shas []string, r checkResult) (int, error) {
	if b.appID == 0 {
		return 0, errors.New("bot: Options.AppID is not set; without it the bot cannot tell its check runs from another App's")
	}
	summary := githubapi.Truncate(r.summary, report.DefaultMaxBytes-1)
	id := b.runID(r)
	n := 0
	for _, sha := range shas {
		latest, err := b.latestRun(ctx, p, sha)
		if err != nil {
			return n, err
		}
		var runID int64
		done := 0 // annotations already on the run
		if latest != nil && latest.GetExternalID() == id && sha != p.Rerun {
			// Unchanged; an earlier poll may have stopped between batches.
			done = latest.GetOutput().GetAnnotationsCount()
			if done >= len(r.annotations) {
				continue
			}
			runID = latest.GetID()
		} else {
			cr, err := b.createRun(ctx, p, sha, r, summary, id)
			if err != nil {
				return n, err
			}
			runID, done = cr.GetID(), cr.GetOutput().GetAnnotationsCount()
		}
		for tries := 0; done < len(r.annotations); {
			batch := r.annotations[done:min(done+annotationsPerRequest, len(r.annotations))]
			_, _, err := b.GitHub.Checks.UpdateCheckRun(ctx, p.Owner, p.Repo, runID, github.UpdateCheckRunOptions{
				Name: b.application().CheckName(p.Target), Output: &github.CheckRunOutput{Title: github.String(r.title), Summary: github.String(summary), Annotations: batch},
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
			cr, _, gerr := b.GitHub.Checks.GetCheckRun(ctx, p.Owner, p.Repo, runID)
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
func (b *Bot) latestRun(ctx context.Context, p *poll, sha string) (*github.CheckRun, error) {
	name := b.application().CheckName(p.Target)
	list, _, err := b.GitHub.Checks.ListCheckRunsForRef(ctx, p.Owner, p.Repo, sha, &github.ListCheckRunsOptions{
		CheckName: github.String(name), AppID: github.Int64(b.appID), Filter: github.String("latest")})
	if err != nil {
		return nil, fmt.Errorf("check runs of %s: %w", githubapi.ShortSHA(sha), err)
	}
	var latest *github.CheckRun
	for _, cr := range list.CheckRuns {
		if cr.GetName() == name && cr.GetApp().GetID() == b.appID && (latest == nil || cr.GetID() > latest.GetID()) {
			latest = cr
		}
	}
	return latest, nil
}

// createRun creates a completed run with the first batch of annotations.
// When the answer is lost it looks for the run (by this App, name and
// external_id) before trying once more.
func (b *Bot) createRun(ctx context.Context, p *poll, sha string, r checkResult, summary, id string) (*github.CheckRun, error) {
	create := func() (*github.CheckRun, error) {
		cr, _, err := b.GitHub.Checks.CreateCheckRun(ctx, p.Owner, p.Repo, github.CreateCheckRunOptions{
			Name: b.application().CheckName(p.Target), HeadSHA: sha, Status: github.String("completed"), Conclusion: github.String(r.conclusion),
			ExternalID: github.String(id),
			Output: &github.CheckRunOutput{Title: github.String(r.title), Summary: github.String(summary),
				Annotations: r.annotations[:min(annotationsPerRequest, len(r.annotations))]},
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
	if latest, lerr := b.latestRun(ctx, p, sha); lerr == nil && latest != nil && latest.GetExternalID() == id {
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
func (b *Bot) runID(r checkResult) string {
	if s := b.application().Stamp(); s != "" {
		return "driftback-" + s + "-" + strings.TrimPrefix(contentID(r), "driftback-")
	}
	return contentID(r)
}

func contentID(r checkResult) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", r.conclusion, r.title, r.summary)
	for _, a := range r.annotations {
		fmt.Fprintf(h, "%s:%d:%s:%s\x00", a.GetPath(), a.GetStartLine(), a.GetTitle(), a.GetMessage())
	}
	return "driftback-" + hex.EncodeToString(h.Sum(nil))[:20]
}
