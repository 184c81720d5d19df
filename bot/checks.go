package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/config"
)

// checkResult is one check run's content.
type checkResult struct {
	conclusion  string // success, neutral or failure
	title       string
	summary     string
	annotations []*github.CheckRunAnnotation
}

// GitHub takes at most 50 annotations per request.
const annotationsPerRequest = 50

// resultOf turns a plan into the check run for the base head (DESIGN §11):
// success when in sync, neutral when drift is proposed, failure (or
// neutral, by configuration) when something was refused.
func resultOf(plan *analyzer.Plan, tc config.Target) checkResult {
	r := checkResult{summary: report.Markdown(plan, report.MarkdownOptions{Target: tc.Name})}
	switch {
	case len(plan.Refusals) > 0:
		r.conclusion, r.title = "failure", fmt.Sprintf("%d change(s) driftback cannot place", len(plan.Refusals))
		if tc.FailOnRefusal != nil && !*tc.FailOnRefusal {
			r.conclusion = "neutral"
		}
	case len(plan.Edits) > 0:
		r.conclusion, r.title = "neutral", fmt.Sprintf("The cluster differs from Git: %d edit(s) proposed", len(plan.Edits))
	default:
		r.conclusion, r.title = "success", "The cluster matches Git"
	}
	for _, ref := range plan.Refusals {
		if ref.File == "" {
			continue
		}
		line := max(ref.Line, 1)
		r.annotations = append(r.annotations, &github.CheckRunAnnotation{
			Path: github.String(ref.File), StartLine: github.Int(line), EndLine: github.Int(line),
			AnnotationLevel: github.String("failure"), Title: github.String(ref.Code + ": " + truncate(ref.Field, 200)),
			Message: github.String(truncate(ref.Message+"\nHow to fix: "+ref.Hint, 4000)),
		})
	}
	return r
}

// postChecksFor posts the plan's result on the base head, and on the PR
// head a success: that commit renders to what the cluster runs.
func (b *Bot) postChecksFor(ctx context.Context, p *poll, shas []string, res checkResult) (int, error) {
	n := 0
	for _, sha := range shas {
		r := res
		if sha != p.baseSHA {
			r = checkResult{conclusion: "success", title: "This branch matches the cluster", summary: res.summary}
			if len(res.annotations) > 0 {
				r.conclusion, r.title, r.annotations = res.conclusion, res.title, res.annotations
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

// postChecks creates or updates the target's check run on each commit,
// and only when its content changed (a hash in external_id says).
func (b *Bot) postChecks(ctx context.Context, p *poll, shas []string, r checkResult) (int, error) {
	owner, repo, name := p.owner, p.repo, p.t.Config.CheckName()
	summary := truncate(r.summary, report.DefaultMaxBytes-1)
	id := contentID(r)
	n := 0
	for _, sha := range shas {
		list, _, err := b.GitHub.Checks.ListCheckRunsForRef(ctx, owner, repo, sha, &github.ListCheckRunsOptions{CheckName: github.String(name)})
		if err != nil {
			return n, fmt.Errorf("check runs of %s: %w", short(sha), err)
		}
		var existing *github.CheckRun
		for _, cr := range list.CheckRuns {
			if cr.GetName() == name && (existing == nil || cr.GetID() > existing.GetID()) {
				existing = cr
			}
		}
		if existing != nil && existing.GetExternalID() == id {
			continue // unchanged: no new check run
		}
		first, rest := split(r.annotations)
		out := &github.CheckRunOutput{Title: github.String(r.title), Summary: github.String(summary), Annotations: first}
		var runID int64
		if existing == nil {
			cr, _, err := b.GitHub.Checks.CreateCheckRun(ctx, owner, repo, github.CreateCheckRunOptions{
				Name: name, HeadSHA: sha, Status: github.String("completed"), Conclusion: github.String(r.conclusion),
				ExternalID: github.String(id), Output: out,
			})
			if err != nil {
				return n, fmt.Errorf("create check run on %s: %w", short(sha), err)
			}
			runID = cr.GetID()
		} else {
			runID = existing.GetID()
			if _, _, err := b.GitHub.Checks.UpdateCheckRun(ctx, owner, repo, runID, github.UpdateCheckRunOptions{
				Name: name, Status: github.String("completed"), Conclusion: github.String(r.conclusion),
				ExternalID: github.String(id), Output: out,
			}); err != nil {
				return n, fmt.Errorf("update check run on %s: %w", short(sha), err)
			}
		}
		for len(rest) > 0 {
			var batch []*github.CheckRunAnnotation
			batch, rest = split(rest)
			if _, _, err := b.GitHub.Checks.UpdateCheckRun(ctx, owner, repo, runID, github.UpdateCheckRunOptions{
				Name: name, Output: &github.CheckRunOutput{Title: github.String(r.title), Summary: github.String(summary), Annotations: batch},
			}); err != nil {
				return n, fmt.Errorf("annotate check run on %s: %w", short(sha), err)
			}
		}
		n++
	}
	return n, nil
}

func split(a []*github.CheckRunAnnotation) (first, rest []*github.CheckRunAnnotation) {
	if len(a) <= annotationsPerRequest {
		return a, nil
	}
	return a[:annotationsPerRequest], a[annotationsPerRequest:]
}

func contentID(r checkResult) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", r.conclusion, r.title, r.summary)
	for _, a := range r.annotations {
		fmt.Fprintf(h, "%s:%d:%s:%s\x00", a.GetPath(), a.GetStartLine(), a.GetTitle(), a.GetMessage())
	}
	return "driftback-" + hex.EncodeToString(h.Sum(nil))[:20]
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.ToValidUTF8(s[:n-len("…")], "")
	return cut + "…"
}
