package githubtest

import (
	"net/url"
	"strings"
)

type authKind int

const (
	authToken    authKind = iota // installation token
	authJWT                      // app JWT
	authDownload                 // signed download URL, no header
	authNone                     // no credentials (the manifest flow)
)

type route struct {
	method   string
	template string // OpenAPI path template
	op       string // OpenAPI operation id
	auth     authKind
	h        func(*call) *reply
	segs     []string
}

// greedy parameters may hold '/' (ref and branch names): go-github and
// GitHub both leave those slashes unescaped in paths.
var greedy = map[string]bool{"ref": true, "basehead": true, "branch": true, "path": true}

var routes []*route

func init() {
	add := func(method, template, op string, auth authKind, h func(*call) *reply) {
		routes = append(routes, &route{method: method, template: template, op: op, auth: auth, h: h,
			segs: strings.Split(strings.TrimPrefix(template, "/"), "/")})
	}
	const R = "/repos/{owner}/{repo}"
	add("GET", "/app", "apps/get-authenticated", authJWT, (*call).getApp)
	add("GET", "/app/installations", "apps/list-installations", authJWT, (*call).listInstallations)
	add("POST", "/app/installations/{installation_id}/access_tokens", "apps/create-installation-access-token", authJWT, (*call).createToken)
	add("GET", R+"/installation", "apps/get-repo-installation", authJWT, (*call).repoInstallation)
	add("POST", "/app-manifests/{code}/conversions", "apps/create-from-manifest", authNone, (*call).convertManifest)
	add("POST", "/settings/apps/new", manifestFormOp, authNone, (*call).manifestForm)
	add("POST", "/organizations/{org}/settings/apps/new", manifestFormOp, authNone, (*call).manifestForm)

	add("GET", "/users/{username}", "users/get-by-username", authToken, (*call).getUser)

	add("GET", R, "repos/get", authToken, (*call).getRepo)
	add("POST", R+"/git/blobs", "git/create-blob", authToken, (*call).createBlob)
	add("GET", R+"/git/blobs/{file_sha}", "git/get-blob", authToken, (*call).getBlob)
	add("POST", R+"/git/trees", "git/create-tree", authToken, (*call).createTree)
	add("GET", R+"/git/trees/{tree_sha}", "git/get-tree", authToken, (*call).getTree)
	add("POST", R+"/git/commits", "git/create-commit", authToken, (*call).createCommit)
	add("GET", R+"/git/commits/{commit_sha}", "git/get-commit", authToken, (*call).getGitCommit)
	add("POST", R+"/git/refs", "git/create-ref", authToken, (*call).createRef)
	add("GET", R+"/git/ref/{ref}", "git/get-ref", authToken, (*call).getRef)
	add("GET", R+"/git/matching-refs/{ref}", "git/list-matching-refs", authToken, (*call).listMatchingRefs)
	add("PATCH", R+"/git/refs/{ref}", "git/update-ref", authToken, (*call).updateRef)
	add("DELETE", R+"/git/refs/{ref}", "git/delete-ref", authToken, (*call).deleteRef)
	add("GET", R+"/tarball/{ref}", "repos/download-tarball-archive", authToken, (*call).tarball)
	add("GET", "/_codeload/{owner}/{repo}/legacy.tar.gz/{ref}", codeloadOp, authDownload, (*call).codeload)

	add("GET", R+"/commits", "repos/list-commits", authToken, (*call).listCommits)
	add("GET", R+"/commits/{ref}/check-runs", "checks/list-for-ref", authToken, (*call).listCheckRuns)
	add("GET", R+"/commits/{ref}", "repos/get-commit", authToken, (*call).getCommit)
	add("GET", R+"/branches/{branch}", "repos/get-branch", authToken, (*call).getBranch)
	add("GET", R+"/contents/{path}", "repos/get-content", authToken, (*call).getContent)
	add("GET", R+"/compare/{basehead}", "repos/compare-commits-with-basehead", authToken, (*call).compare)

	add("GET", R+"/pulls", "pulls/list", authToken, (*call).listPulls)
	add("POST", R+"/pulls", "pulls/create", authToken, (*call).createPull)
	add("GET", R+"/pulls/{pull_number}", "pulls/get", authToken, (*call).getPull)
	add("GET", R+"/pulls/{pull_number}/files", "pulls/list-files", authToken, (*call).listPullFiles)
	add("PATCH", R+"/pulls/{pull_number}", "pulls/update", authToken, (*call).updatePull)
	add("PUT", R+"/pulls/{pull_number}/merge", "pulls/merge", authToken, (*call).mergePull)
	add("GET", R+"/pulls/{pull_number}/requested_reviewers", "pulls/list-requested-reviewers", authToken, (*call).listReviewers)
	add("POST", R+"/pulls/{pull_number}/requested_reviewers", "pulls/request-reviewers", authToken, (*call).requestReviewers)
	add("GET", R+"/issues", "issues/list-for-repo", authToken, (*call).listIssues)
	add("POST", R+"/issues", "issues/create", authToken, (*call).createIssue)
	add("GET", R+"/issues/{issue_number}", "issues/get", authToken, (*call).getIssue)
	add("PATCH", R+"/issues/{issue_number}", "issues/update", authToken, (*call).updateIssue)
	add("GET", R+"/issues/{issue_number}/comments", "issues/list-comments", authToken, (*call).listComments)
	add("POST", R+"/issues/{issue_number}/comments", "issues/create-comment", authToken, (*call).createComment)
	add("GET", R+"/issues/{issue_number}/labels", "issues/list-labels-on-issue", authToken, (*call).listLabels)
	add("POST", R+"/issues/{issue_number}/labels", "issues/add-labels", authToken, (*call).addLabels)
	add("DELETE", R+"/issues/{issue_number}/labels/{name}", "issues/remove-label", authToken, (*call).removeLabel)

	add("POST", R+"/check-runs", "checks/create", authToken, (*call).createCheckRun)
	add("GET", R+"/check-runs/{check_run_id}", "checks/get", authToken, (*call).getCheckRun)
	add("PATCH", R+"/check-runs/{check_run_id}", "checks/update", authToken, (*call).updateCheckRun)
	add("GET", R+"/check-runs/{check_run_id}/annotations", "checks/list-annotations", authToken, (*call).listAnnotations)
}

// match finds the route for an escaped path. Segments are unescaped one by
// one, so an escaped "%2F" stays inside its parameter.
func match(method, escaped string) (*route, map[string]string) {
	parts := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	if method == "HEAD" {
		method = "GET"
	}
	for _, rt := range routes {
		if rt.method != method {
			continue
		}
		params := map[string]string{}
		if matchSegs(rt.segs, parts, params) {
			return rt, params
		}
	}
	return nil, nil
}

func matchSegs(segs, parts []string, params map[string]string) bool {
	if len(segs) == 0 {
		return len(parts) == 0
	}
	if len(parts) == 0 {
		return false
	}
	seg := segs[0]
	if !strings.HasPrefix(seg, "{") {
		return seg == parts[0] && matchSegs(segs[1:], parts[1:], params)
	}
	name := strings.Trim(seg, "{}")
	n := 1
	if greedy[name] {
		n = len(parts) - (len(segs) - 1) // leave one part per remaining segment
	}
	for ; n >= 1; n-- {
		if n > len(parts) {
			continue
		}
		vals := make([]string, n)
		ok := true
		for i, p := range parts[:n] {
			v, err := url.PathUnescape(p)
			if err != nil || v == "" {
				ok = false
				break
			}
			vals[i] = v
		}
		if ok && matchSegs(segs[1:], parts[n:], params) {
			params[name] = strings.Join(vals, "/")
			return true
		}
	}
	return false
}
