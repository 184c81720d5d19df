package githubtest

import "net/http"

// need is one way to be allowed an operation: permission at level.
type need struct{ perm, level string }

// required maps each installation-token operation to the App permissions
// GitHub asks for it ("Permissions required for GitHub Apps"); holding any
// one of the listed needs is enough. An operation missing here is refused,
// so a new route must say what it needs.
var required = map[string][]need{
	"repos/get": {{"metadata", "read"}},
	// Branches are repository metadata.
	"repos/get-branch": {{"metadata", "read"}},

	"git/create-blob":        {{"contents", "write"}},
	"git/create-tree":        {{"contents", "write"}},
	"git/create-commit":      {{"contents", "write"}},
	"git/create-ref":         {{"contents", "write"}},
	"git/update-ref":         {{"contents", "write"}},
	"git/delete-ref":         {{"contents", "write"}},
	"git/get-blob":           {{"contents", "read"}},
	"git/get-tree":           {{"contents", "read"}},
	"git/get-commit":         {{"contents", "read"}},
	"git/get-ref":            {{"contents", "read"}},
	"git/list-matching-refs": {{"contents", "read"}},

	"repos/download-tarball-archive":      {{"contents", "read"}},
	"repos/list-commits":                  {{"contents", "read"}},
	"repos/get-commit":                    {{"contents", "read"}},
	"repos/get-content":                   {{"contents", "read"}},
	"repos/compare-commits-with-basehead": {{"contents", "read"}},

	"pulls/list":       {{"pull_requests", "read"}},
	"pulls/get":        {{"pull_requests", "read"}},
	"pulls/list-files": {{"pull_requests", "read"}},
	"pulls/create":     {{"pull_requests", "write"}},
	"pulls/update":     {{"pull_requests", "write"}},
	// Merging writes the base branch.
	"pulls/merge":                    {{"contents", "write"}},
	"pulls/list-requested-reviewers": {{"pull_requests", "read"}},
	"pulls/request-reviewers":        {{"pull_requests", "write"}},

	// The repository's issues, the drift dashboard.
	"issues/list-for-repo": {{"issues", "read"}},
	"issues/get":           {{"issues", "read"}},
	"issues/create":        {{"issues", "write"}},
	"issues/update":        {{"issues", "write"}},

	// A pull request is an issue: its comments and labels take either.
	"issues/list-comments":        {{"issues", "read"}, {"pull_requests", "read"}},
	"issues/create-comment":       {{"issues", "write"}, {"pull_requests", "write"}},
	"issues/list-labels-on-issue": {{"issues", "read"}, {"pull_requests", "read"}},
	"issues/add-labels":           {{"issues", "write"}, {"pull_requests", "write"}},
	"issues/remove-label":         {{"issues", "write"}, {"pull_requests", "write"}},

	"checks/create":           {{"checks", "write"}},
	"checks/update":           {{"checks", "write"}},
	"checks/get":              {{"checks", "read"}},
	"checks/list-for-ref":     {{"checks", "read"}},
	"checks/list-annotations": {{"checks", "read"}},

	// A public profile: GitHub asks for no permission ("Get a user").
	"users/get-by-username": {},
}

// permitted answers an installation-token request whose App lacks the
// permission the operation needs with GitHub's 403; nil when allowed.
func (c *call) permitted() *reply {
	if c.rt.auth != authToken || c.app == nil {
		return nil
	}
	needs, ok := required[c.rt.op]
	if !ok {
		return errReply(http.StatusForbidden, "Resource not accessible by integration")
	}
	if len(needs) == 0 {
		return nil
	}
	for _, n := range needs {
		if c.app.can(n.perm, n.level) {
			return nil
		}
	}
	return notAccessible()
}
