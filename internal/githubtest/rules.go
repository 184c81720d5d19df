package githubtest

import (
	"fmt"
	"path"
)

// Ruleset is a repository ruleset on branches, the part of it that guards
// refs written through the Git Data API.
type Ruleset struct {
	Name string
	// Include lists the refs it applies to, as path.Match patterns on the
	// full ref name ("refs/heads/driftback/*").
	Include     []string
	NoForcePush bool // the non_fast_forward rule
	NoDeletion  bool // the deletion rule
	NoCreation  bool // the creation rule: only those who may bypass create matching refs
	// Classic makes it a classic branch protection rule instead, refusing
	// in its own words ("Cannot force-push to this protected branch");
	// Silent refuses every write of a matching ref with the bare
	// "Reference update failed" GitHub also sends.
	Classic, Silent bool
	// Restricted (classic): only the people and apps the rule lists may
	// push; the App is not among them.
	Restricted bool
	// RequiredChecks (classic): a matching branch moves only to a commit
	// with a successful check run of each of these names.
	RequiredChecks []string
}

// refWrite is one ref write as the refs API sees it.
type refWrite struct {
	ref                  string
	to                   string // the commit it moves to; "" for a deletion
	force, del, creation bool
}

// AddRuleset puts an active ruleset on a repository.
func (s *Server) AddRuleset(owner, name string, r Ruleset) {
	s.withRepo(owner, name, func(rp *repo) { rp.rulesets = append(rp.rulesets, r) })
}

// ruleViolation answers a ref write that an active ruleset or branch
// protection forbids, the way the refs API does: 422 with the rule's text;
// nil when none applies.
func (rp *repo) ruleViolation(w refWrite) *reply {
	force, del := w.force, w.del
	for _, r := range rp.rulesets {
		applies := false
		for _, pat := range r.Include {
			ok, _ := path.Match(pat, w.ref)
			applies = applies || ok
		}
		switch {
		case !applies:
		case r.Silent:
			return errReply(422, "Reference update failed")
		case w.creation && r.NoCreation && !r.Classic:
			return errReply(422, "Repository rule violations found\n\nCannot create ref due to creations being restricted.\n\n")
		case w.creation:
			// The other rules say nothing about a new ref.
		case r.Classic && r.Restricted:
			return errReply(422, "You're not authorized to push to this branch. Visit https://docs.github.com/articles/about-protected-branches/ for more information.")
		case r.Classic && !del && rp.missingCheck(r.RequiredChecks, w.to) != "":
			return errReply(422, fmt.Sprintf("Required status check %q is expected.", rp.missingCheck(r.RequiredChecks, w.to)))
		case r.Classic && del && r.NoDeletion:
			return errReply(422, "Cannot delete this protected branch")
		case r.Classic && force && r.NoForcePush:
			return errReply(422, "Cannot force-push to this protected branch")
		case del && r.NoDeletion:
			return errReply(422, "Repository rule violations found\n\nCannot delete this branch\n\n")
		case force && r.NoForcePush:
			return errReply(422, "Repository rule violations found\n\nCannot force-push to this branch\n\n")
		}
	}
	return nil
}

// missingCheck is the first of names without a successful check run on
// sha; "" when none is missing.
func (rp *repo) missingCheck(names []string, sha string) string {
	for _, name := range names {
		ok := false
		for _, cr := range rp.runsByHead[sha] {
			ok = ok || cr.name == name && cr.conclusion == "success"
		}
		if !ok {
			return name
		}
	}
	return ""
}
