package config

import (
	"github.com/driftback/driftback/internal/kube"

	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// base is a small valid config; the error cases edit it, so their line
// numbers refer to these lines.
const base = `github:
  appID: 1
  privateKeyFile: /k.pem
  owner: my-org
clusters:
- name: prod
  kubeconfig: /kube.yaml
targets:
- name: shop
  repo: my-org/shop
  root: overlays/prod
  cluster: prod
  namespaces: [shop]
  appliedRevision:
    flux: {namespace: flux-system, name: shop}
`

// with returns base with old replaced by new; old must occur exactly once.
func with(t *testing.T, old, new string) string {
	t.Helper()
	if n := strings.Count(base, old); n != 1 {
		t.Fatalf("with: %q occurs %d times in base", old, n)
	}
	return strings.Replace(base, old, new, 1)
}

// A root that is a HelmRelease's file reads its applied revision from that
// HelmRelease; resolving copies the reference, never shares it.
func TestHelmReleaseRevision(t *testing.T) {
	text := strings.Replace(with(t, "    flux: {namespace: flux-system, name: shop}", "    helmRelease: {namespace: shop, name: web}"),
		"root: overlays/prod", "root: clusters/prod/web/helmrelease.yaml", 1)
	c, err := Parse("driftback.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	tc := c.Target("shop")
	if tc.AppliedRevision.Source() != RevisionHelmRelease || *tc.AppliedRevision.HelmRelease != (kube.ObjectRef{Namespace: "shop", Name: "web"}) {
		t.Fatalf("appliedRevision %+v", tc.AppliedRevision)
	}
	if tc.AppliedRevision.HelmRelease == c.Targets[0].AppliedRevision.HelmRelease {
		t.Error("the resolved target shares the parsed target's HelmRelease reference")
	}
}

func TestBaseIsValid(t *testing.T) {
	c, err := Parse("driftback.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Targets) != 1 || c.PollInterval != time.Minute || c.Listen != ":8080" || c.GitHub.APIURL != DefaultAPIURL ||
		c.Clusters[0].QPS != DefaultQPS || c.Clusters[0].Burst != DefaultBurst || c.Instance != "default" {
		t.Fatalf("defaults not filled: %+v", c)
	}
}

func TestErrors(t *testing.T) {
	const secondTarget = `
- name: shop
  repo: my-org/shop
  root: overlays/dev
  cluster: prod
  namespaces: [dev]
  appliedRevision: {head: true}
`
	cases := []struct {
		name string
		src  func(t *testing.T) string
		at   string // FILE:LINE:COL of the first error
		msg  string // fragment of the first error (after the position)
		n    int    // how many errors; 0 means 1
	}{
		{"unknown top-level key", func(t *testing.T) string { return with(t, "clusters:\n", "colour: blue\nclusters:\n") },
			"driftback.yaml:5:1", `: unknown key "colour"; allowed keys are: github, instance, pollInterval, listen, clusters, defaults, targets`, 0},
		{"unknown nested key with suggestion", func(t *testing.T) string { return with(t, "  root: overlays/prod", "  rot: overlays/prod") },
			"driftback.yaml:11:3", `targets[0]: unknown key "rot"; did you mean "root"?`, 0},
		{"key in the wrong case", func(t *testing.T) string { return with(t, "  appID: 1", "  appId: 1") },
			"driftback.yaml:2:3", `github: unknown key "appId"; did you mean "appID"?`, 0},
		{"key from another tool", func(t *testing.T) string { return with(t, "  root: overlays/prod", "  path: overlays/prod") },
			"driftback.yaml:11:3", `targets[0]: unknown key "path"; did you mean "root"?`, 0},
		{"key one level too high", func(t *testing.T) string {
			return with(t, "  namespaces: [shop]", "  namespaces: [shop]\n  labels: [drift]")
		},
			"driftback.yaml:14:3", `targets[0]: unknown key "labels"; did you mean "pullRequest.labels"?`, 0},
		{"unknown key in a reference", func(t *testing.T) string {
			return with(t, "{namespace: flux-system, name: shop}", "{namespace: flux-system, name: shop, kind: X}")
		},
			"driftback.yaml:15:48", `targets[0].appliedRevision.flux: unknown key "kind"`, 0},
		{"wrong type: number", func(t *testing.T) string { return with(t, "  appID: 1", "  appID: one") },
			"driftback.yaml:2:10", `github.appID: expected a whole number, got the string "one"`, 0},
		{"wrong type: quoted number", func(t *testing.T) string { return with(t, "  appID: 1", `  appID: "1"`) },
			"driftback.yaml:2:10", `github.appID: expected a whole number, got the string "1"; remove the quotes`, 0},
		{"wrong type: list wanted", func(t *testing.T) string { return with(t, "  namespaces: [shop]", "  namespaces: shop") },
			"driftback.yaml:13:15", `targets[0].namespaces: expected a list, got the string "shop"; write [shop] for a single entry`, 0},
		{"wrong type: mapping wanted", func(t *testing.T) string {
			return with(t, "  owner: my-org\n", "  owner: my-org\npollInterval: 1m\ndefaults: [a]\n")
		},
			"driftback.yaml:6:11", `defaults: expected a mapping with the keys appliers, ignore, pullRequest, failOnRefusal, proposeRestored, got a list`, 0},
		{"wrong type: boolean for text", func(t *testing.T) string {
			return with(t, "  root: overlays/prod", "  root: overlays/prod\n  baseBranch: true")
		},
			"driftback.yaml:12:15", `targets[0].baseBranch: expected a string, got the boolean true; quote it ("true")`, 0},
		{"wrong type: quoted boolean", func(t *testing.T) string { return with(t, "  kubeconfig: /kube.yaml", "  inCluster: \"yes\"") },
			"driftback.yaml:7:14", `clusters[0].inCluster: expected true or false, got the string "yes"`, 0},
		{"duplicate key", func(t *testing.T) string {
			return with(t, "  root: overlays/prod", "  root: overlays/prod\n  root: overlays/dev")
		},
			"driftback.yaml:12:3", `targets[0].root: duplicate key "root" (first at line 11)`, 0},
		{"duplicate target name", func(t *testing.T) string { return base + secondTarget[1:] },
			"driftback.yaml:16:9", `targets[1].name: "shop" is used twice (first at line 9)`, 0},
		{"duplicate cluster name", func(t *testing.T) string {
			return with(t, "  kubeconfig: /kube.yaml\n", "  kubeconfig: /kube.yaml\n- name: prod\n  inCluster: true\n")
		},
			"driftback.yaml:8:9", `clusters[1].name: "prod" is used twice (first at line 6)`, 0},
		{"missing required key", func(t *testing.T) string { return with(t, "  repo: my-org/shop\n", "") },
			"driftback.yaml:9:3", `targets[0].repo: missing; set the GitHub repository as owner/name`, 0},
		{"missing section", func(t *testing.T) string { return base[strings.Index(base, "clusters:"):] },
			"driftback.yaml:1:1", `github: missing; set appID`, 0},
		{"missing appliedRevision", func(t *testing.T) string {
			return with(t, "  appliedRevision:\n    flux: {namespace: flux-system, name: shop}\n", "")
		}, "driftback.yaml:9:3", `targets[0].appliedRevision: missing; set exactly one of flux`, 0},
		{"both key options", func(t *testing.T) string { return with(t, "  owner: my-org", "  privateKeyEnv: KEY\n  owner: my-org") },
			"driftback.yaml:4:3", `github: set exactly one of privateKeyFile or privateKeyEnv, not both`, 0},
		{"neither key option", func(t *testing.T) string { return with(t, "  privateKeyFile: /k.pem\n", "") },
			"driftback.yaml:2:3", `github: set exactly one of privateKeyFile or privateKeyEnv (neither is set)`, 0},
		{"both installation options", func(t *testing.T) string { return with(t, "  owner: my-org", "  owner: my-org\n  installationID: 7") },
			"driftback.yaml:5:3", `github: set exactly one of installationID or owner, not both`, 0},
		{"kubeconfig and inCluster", func(t *testing.T) string {
			return with(t, "  kubeconfig: /kube.yaml", "  kubeconfig: /kube.yaml\n  inCluster: true")
		},
			"driftback.yaml:8:3", `clusters[0]: set exactly one of kubeconfig or inCluster: true, not both`, 0},
		{"neither kubeconfig nor inCluster", func(t *testing.T) string { return with(t, "  kubeconfig: /kube.yaml", "  inCluster: false") },
			"driftback.yaml:6:3", `clusters[0]: set exactly one of kubeconfig (a file path) or inCluster: true`, 0},
		{"context without kubeconfig", func(t *testing.T) string {
			return with(t, "  kubeconfig: /kube.yaml", "  inCluster: true\n  context: x")
		},
			"driftback.yaml:8:3", `clusters[0].context: only applies with kubeconfig`, 0},
		{"unknown cluster reference", func(t *testing.T) string { return with(t, "  cluster: prod", "  cluster: prd") },
			"driftback.yaml:12:12", `targets[0].cluster: "prd" names no cluster; clusters are: prod`, 0},
		{"bad repo format", func(t *testing.T) string { return with(t, "  repo: my-org/shop", "  repo: shop") },
			"driftback.yaml:10:9", `targets[0].repo: "shop" is not owner/name; write the repository as in github.com/OWNER/NAME`, 0},
		{"repo as URL", func(t *testing.T) string {
			return with(t, "  repo: my-org/shop", "  repo: https://github.com/my-org/shop")
		},
			"driftback.yaml:10:9", `is not owner/name (not a URL)`, 0},
		{"repo of another owner", func(t *testing.T) string { return with(t, "  repo: my-org/shop", "  repo: other/shop") },
			"driftback.yaml:10:9", `targets[0].repo: owner "other" differs from github.owner "my-org"`, 0},
		{"root escapes the repository", func(t *testing.T) string { return with(t, "  root: overlays/prod", "  root: ../x") },
			"driftback.yaml:11:9", `targets[0].root: "../x" leaves the folder it starts from (..)`, 0},
		{"root escapes midway", func(t *testing.T) string { return with(t, "  root: overlays/prod", "  root: overlays/../../x") },
			"driftback.yaml:11:9", `targets[0].root: "overlays/../../x" leaves the folder`, 0},
		{"absolute root", func(t *testing.T) string { return with(t, "  root: overlays/prod", "  root: /abs") },
			"driftback.yaml:11:9", `targets[0].root: "/abs" is absolute; give a folder relative to the repository root, e.g. abs`, 0},
		{"write scope on workflows", func(t *testing.T) string {
			return with(t, "  root: overlays/prod", "  root: overlays/prod\n  writeScope: .github/workflows")
		},
			"driftback.yaml:12:15", `targets[0].writeScope: ".github/workflows": driftback never writes under .github/workflows/`, 0},
		{"bad duration", func(t *testing.T) string { return "pollInterval: 5 minutes\n" + base },
			"driftback.yaml:1:15", `pollInterval: "5 minutes" is not a duration; write a number with a unit`, 0},
		{"duration without unit", func(t *testing.T) string { return "pollInterval: 60\n" + base },
			"driftback.yaml:1:15", `pollInterval: expected a duration such as 30s, 1m or 1h30m, got the number 60; add a unit (60s)`, 0},
		{"interval below the minimum", func(t *testing.T) string { return "pollInterval: 5s\n" + base },
			"driftback.yaml:1:15", `pollInterval: 5s is below the minimum 10s`, 0},
		{"zero qps", func(t *testing.T) string {
			return with(t, "  kubeconfig: /kube.yaml", "  kubeconfig: /kube.yaml\n  qps: 0")
		},
			"driftback.yaml:8:8", `clusters[0].qps: must be a positive number, got 0`, 0},
		{"audit without a source", func(t *testing.T) string {
			return with(t, "  kubeconfig: /kube.yaml", "  kubeconfig: /kube.yaml\n  audit:\n    keep: 10")
		},
			"driftback.yaml:9:5", `clusters[0].audit: set logFile (the audit log's path), webhookTokenFile (the audit webhook's token), or both`, 0},
		{"audit user mapped twice", func(t *testing.T) string {
			return with(t, "  kubeconfig: /kube.yaml", "  kubeconfig: /kube.yaml\n  audit:\n    logFile: /a.log\n    githubUsers:\n    - {user: alice, login: alice}\n    - {user: alice, login: alice2}")
		},
			"driftback.yaml:12:14", `clusters[0].audit.githubUsers[1].user: "alice" is mapped twice (first at line 11)`, 0},
		{"audit login not a GitHub login", func(t *testing.T) string {
			return with(t, "  kubeconfig: /kube.yaml", "  kubeconfig: /kube.yaml\n  audit:\n    logFile: /a.log\n    githubUsers:\n    - {user: alice, login: alice@example.com}")
		},
			"driftback.yaml:11:28", `clusters[0].audit.githubUsers[0].login: "alice@example.com" is not a GitHub login`, 0},
		{"bad listen address", func(t *testing.T) string { return "listen: 8080\n" + base },
			"driftback.yaml:1:9", `listen: "8080" is not host:port; write ":8080"`, 0},
		{"bad instance name", func(t *testing.T) string { return "instance: Prod Fleet\n" + base },
			"driftback.yaml:1:11", `instance: "Prod Fleet" is not a valid instance name; use 1-63 lower-case letters, digits and '-'`, 0},
		{"bad target name", func(t *testing.T) string { return with(t, "- name: shop", "- name: Shop_Prod") },
			"driftback.yaml:9:9", `targets[0].name: "Shop_Prod" is not a valid target name; use 1-63 lower-case letters, digits and '-'`, 0},
		{"target name too long", func(t *testing.T) string { return with(t, "- name: shop", "- name: "+strings.Repeat("a", 64)) },
			"driftback.yaml:9:9", `is not a valid target name`, 0},
		{"bad label selector", func(t *testing.T) string { return with(t, "  namespaces: [shop]", `  namespaceSelector: "team in (a"`) },
			"driftback.yaml:13:22", `targets[0].namespaceSelector: "team in (a" is not a label selector: found '', expected: ',' or ')'`, 0},
		{"no namespaces", func(t *testing.T) string { return with(t, "  namespaces: [shop]\n", "") },
			"driftback.yaml:9:3", `targets[0]: set namespaces, namespaceSelector or both`, 0},
		{"bad namespace", func(t *testing.T) string { return with(t, "  namespaces: [shop]", "  namespaces: [shop, Shop]") },
			"driftback.yaml:13:22", `targets[0].namespaces[1]: "Shop" is not a namespace name`, 0},
		{"repeated namespace", func(t *testing.T) string { return with(t, "  namespaces: [shop]", "  namespaces: [shop, shop]") },
			"driftback.yaml:13:22", `targets[0].namespaces[1]: "shop" is listed twice (first at line 13)`, 0},
		{"bad kinds entry", func(t *testing.T) string {
			return with(t, "  namespaces: [shop]", "  namespaces: [shop]\n  kinds: {exclude: [event]}")
		},
			"driftback.yaml:14:21", `targets[0].kinds.exclude[0]: "event" is not a kind; write Kind or Kind.group`, 0},
		{"kind included and excluded", func(t *testing.T) string {
			return with(t, "  namespaces: [shop]", "  namespaces: [shop]\n  kinds: {include: [Service], exclude: [Service]}")
		}, "driftback.yaml:14:41", `targets[0].kinds.exclude[0]: "Service" is both included and excluded`, 0},
		{"two revision sources", func(t *testing.T) string {
			return with(t, "    flux: {namespace: flux-system, name: shop}", "    flux: {namespace: flux-system, name: shop}\n    head: true")
		}, "driftback.yaml:16:5", `targets[0].appliedRevision: set exactly one of flux, argocd, helmRelease or head, not flux and head`, 0},
		{"head false", func(t *testing.T) string {
			return with(t, "    flux: {namespace: flux-system, name: shop}", "    head: false")
		},
			"driftback.yaml:15:11", `targets[0].appliedRevision.head: false says nothing; set head: true`, 0},
		{"helmRelease for a folder root", func(t *testing.T) string {
			return with(t, "    flux: {namespace: flux-system, name: shop}", "    helmRelease: {namespace: shop, name: web}")
		}, "driftback.yaml:15:18", `targets[0].appliedRevision.helmRelease: root "overlays/prod" is a folder; helmRelease is for a root that is a HelmRelease's YAML file`, 0},
		{"helmRelease and argocd", func(t *testing.T) string {
			return with(t, "    flux: {namespace: flux-system, name: shop}", "    argocd: {namespace: argocd, name: shop}\n    helmRelease: {namespace: shop, name: web}")
		}, "driftback.yaml:16:5", `targets[0].appliedRevision: set exactly one of flux, argocd, helmRelease or head, not argocd and helmRelease`, 0},
		{"revision reference without name", func(t *testing.T) string {
			return with(t, "    flux: {namespace: flux-system, name: shop}", "    argocd: {namespace: argocd}")
		}, "driftback.yaml:15:13", `targets[0].appliedRevision.argocd.name: missing; set the name of the Argo CD Application`, 0},
		{"private key inline", func(t *testing.T) string {
			return with(t, "  privateKeyFile: /k.pem", "  privateKey: |\n    -----BEGIN RSA PRIVATE KEY-----\n    abc\n    -----END RSA PRIVATE KEY-----")
		}, "driftback.yaml:3:3", `github.privateKey: secrets do not belong in the config file`, 0},
		{"private key in the file field", func(t *testing.T) string {
			return with(t, "  privateKeyFile: /k.pem", "  privateKeyFile: \"-----BEGIN RSA PRIVATE KEY-----\\nabc\"")
		},
			"driftback.yaml:3:19", `github.privateKeyFile: holds a PEM key, not a file path`, 0},
		{"inline webhook secret", func(t *testing.T) string {
			return with(t, "  privateKeyFile: /k.pem", "  privateKeyFile: /k.pem\n  webhookSecret: s3cret")
		}, "driftback.yaml:4:3", `github.webhookSecret: secrets do not belong in the config file (it gets committed, shared and printed); put the App's webhook secret in a file`, 0},
		{"empty webhook secret file", func(t *testing.T) string {
			return with(t, "  privateKeyFile: /k.pem", "  privateKeyFile: /k.pem\n  webhookSecretFile: \" \"")
		}, "driftback.yaml:4:22", `github.webhookSecretFile: is empty`, 0},
		{"bad env var name", func(t *testing.T) string { return with(t, "  privateKeyFile: /k.pem", "  privateKeyEnv: $KEY") },
			"driftback.yaml:3:18", `github.privateKeyEnv: "$KEY" is not an environment variable name`, 0},
		{"bad api URL", func(t *testing.T) string {
			return with(t, "  owner: my-org", "  owner: my-org\n  apiURL: ghe.example/api/v3")
		},
			"driftback.yaml:5:11", `github.apiURL: "ghe.example/api/v3" is not an http(s) URL`, 0},
		{"reviewer with @", func(t *testing.T) string {
			return with(t, "  namespaces: [shop]", "  namespaces: [shop]\n  pullRequest: {reviewers: ['@alice']}")
		},
			"driftback.yaml:14:29", `targets[0].pullRequest.reviewers[0]: "@alice": write the login without @ (alice)`, 0},
		{"team with organisation", func(t *testing.T) string {
			return "defaults:\n  pullRequest:\n    teamReviewers: [my-org/platform]\n" + base
		},
			"driftback.yaml:3:21", `defaults.pullRequest.teamReviewers[0]: "my-org/platform": write only the team slug (platform)`, 0},
		{"bad branch prefix", func(t *testing.T) string { return "defaults:\n  pullRequest: {branchPrefix: 'drift back/'}\n" + base },
			"driftback.yaml:2:31", `defaults.pullRequest.branchPrefix: "drift back/" cannot start a branch name: it contains ' '`, 0},
		{"empty appliers", func(t *testing.T) string { return "defaults: {appliers: []}\n" + base },
			"driftback.yaml:1:22", `defaults.appliers: is empty; name at least one field manager`, 0},
		{"ignore rule without path", func(t *testing.T) string { return "defaults:\n  ignore:\n  - kind: Deployment\n" + base },
			"driftback.yaml:3:5", `defaults.ignore[0].path: missing; name the field to ignore`, 0},
		{"ignore rule with bad path", func(t *testing.T) string { return "defaults:\n  ignore:\n  - path: spec..replicas\n" + base },
			"driftback.yaml:3:11", `defaults.ignore[0].path: "spec..replicas" is not a field path: empty key at character 6`, 0},
		{"empty list entry", func(t *testing.T) string { return "defaults:\n  appliers:\n  -\n  - kubectl\n" + base },
			"driftback.yaml:3:4", `defaults.appliers[0]: expected an entry, got nothing (null); remove the empty list entry`, 0},
		{"no targets", func(t *testing.T) string { return base[:strings.Index(base, "targets:")] + "targets: []\n" },
			"driftback.yaml:8:10", `targets: is empty; list at least one target`, 0},
		{"merge key", func(t *testing.T) string { return "x-common: &c {root: a}\n" + base },
			"driftback.yaml:1:1", `unknown key "x-common"`, 0},
		{"merge key use", func(t *testing.T) string { return with(t, "- name: shop\n", "- <<: {cluster: prod}\n  name: shop\n") },
			"driftback.yaml:9:3", `targets[0]: merge keys (<<) are not supported; put shared settings under defaults`, 0},
		{"custom tag", func(t *testing.T) string { return with(t, "  root: overlays/prod", "  root: !secret overlays/prod") },
			"driftback.yaml:11:9", `targets[0].root: custom YAML tag !secret is not supported`, 0},
		{"several errors, sorted", func(t *testing.T) string {
			return strings.NewReplacer("  cluster: prod", "  cluster: prd", "  appID: 1", "  appID: 0").Replace(base)
		}, "driftback.yaml:2:10", `github.appID: must be a positive number, got 0`, 2},
		{"empty file", func(t *testing.T) string { return "" },
			"driftback.yaml:1:1", `the file is empty`, 0},
		{"only comments", func(t *testing.T) string { return "# nothing yet\n" },
			"driftback.yaml:1:1", `the file is empty`, 0},
		{"not a mapping", func(t *testing.T) string { return "- github\n- targets\n" },
			"driftback.yaml:1:1", `the file must be a mapping with the keys github, pollInterval, listen, clusters, defaults and targets; got a list`, 0},
		{"multi-document file", func(t *testing.T) string { return base + "---\n" + base },
			"driftback.yaml:16:1", `a second YAML document starts here`, 0},
		{"YAML syntax error", func(t *testing.T) string { return with(t, "  namespaces: [shop]", "  namespaces: [shop") },
			"driftback.yaml:13", `not valid YAML: did not find expected ',' or ']'`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src(t)
			c, err := Parse("driftback.yaml", []byte(src))
			if err == nil {
				t.Fatalf("no error; parsed %+v", c)
			}
			if c != nil {
				t.Errorf("a config came back with the error")
			}
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %v (%T) is not Errors", err, err)
			}
			var first *Error
			if !errors.As(err, &first) || first != errs[0] {
				t.Errorf("errors.As(*Error) does not find the first error")
			}
			want := tc.at + ": "
			got := errs[0].Error()
			if !strings.HasPrefix(got, want) || !strings.Contains(got, tc.msg) {
				t.Errorf("first error:\n  got  %s\n  want %s...%s\nall:\n%v", got, want, tc.msg, err)
			}
			n := tc.n
			if n == 0 {
				n = 1
			}
			if len(errs) != n {
				t.Errorf("got %d errors, want %d:\n%v", len(errs), n, err)
			}
			for i := 1; i < len(errs); i++ {
				if errs[i].Line < errs[i-1].Line {
					t.Errorf("errors not sorted by line:\n%v", err)
				}
			}
		})
	}
	if len(cases) < 20 {
		t.Fatalf("only %d cases", len(cases))
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "d.yaml", Line: 12, Column: 5, Field: "targets[0].cluster", Msg: "bad"}, "d.yaml:12:5: targets[0].cluster: bad"},
		{Error{File: "d.yaml", Line: 3, Msg: "bad"}, "d.yaml:3: bad"},
		{Error{File: "d.yaml", Msg: "bad"}, "d.yaml: bad"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestLoad(t *testing.T) {
	c, err := Load("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.Targets); got != 4 {
		t.Fatalf("%d targets", got)
	}
	if c.PollInterval != 2*time.Minute {
		t.Errorf("pollInterval %v", c.PollInterval)
	}
	if _, err := Load("testdata/does-not-exist.yaml"); err == nil || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestDefaultsMerge(t *testing.T) {
	src := `github: {appID: 1, privateKeyEnv: KEY, installationID: 2, apiURL: "https://ghe.example/api/v3"}
clusters: [{name: c, inCluster: true}]
defaults:
  appliers: [flux]
  ignore: [{path: spec.replicas}]
  pullRequest: {labels: [drift], reviewers: [alice], teamReviewers: [ops], branchPrefix: bot/}
  failOnRefusal: false
  proposeRestored: true
targets:
- {name: a, repo: o/a, root: ./x/, cluster: c, namespaces: [n], appliedRevision: {head: true}}
- name: b
  repo: o/b
  root: y
  writeScope: y/
  cluster: c
  namespaceSelector: team=b
  appliedRevision: {argocd: {namespace: argocd, name: b}}
  appliers: [argocd-controller]
  ignore: [{kind: Service, path: spec.ports}]
  pullRequest: {labels: [], draft: true}
  failOnRefusal: true
  proposeRestored: false
`
	c, err := Parse("d.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if c.GitHub.APIURL != "https://ghe.example/api/v3/" {
		t.Errorf("apiURL %q", c.GitHub.APIURL)
	}
	a := c.Target("a")
	wantA := &Target{
		Name: "a", Repo: "o/a", Root: "x", Cluster: "c", Namespaces: []string{"n"},
		AppliedRevision: AppliedRevision{Head: true},
		Appliers:        []string{"flux"},
		Ignore:          []kube.IgnoreRule{{Path: "spec.replicas"}},
		PullRequest:     &PullRequest{BranchPrefix: "bot/", Labels: []string{"drift"}, Reviewers: []string{"alice"}, TeamReviewers: []string{"ops"}, Draft: ptr(false)},
		FailOnRefusal:   ptr(false),
		ProposeRestored: ptr(true),
	}
	if !reflect.DeepEqual(a, wantA) {
		t.Errorf("target a:\n got %s\nwant %s", dump(a), dump(wantA))
	}
	b := c.Target("b")
	wantB := &Target{
		Name: "b", Repo: "o/b", Root: "y", WriteScope: "y", Cluster: "c", NamespaceSelector: "team=b",
		AppliedRevision: AppliedRevision{ArgoCD: &kube.ObjectRef{Namespace: "argocd", Name: "b"}},
		Appliers:        []string{"argocd-controller"},
		Ignore:          []kube.IgnoreRule{{Path: "spec.replicas"}, {Kind: "Service", Path: "spec.ports"}},
		PullRequest:     &PullRequest{BranchPrefix: "bot/", Labels: []string{}, Reviewers: []string{"alice"}, TeamReviewers: []string{"ops"}, Draft: ptr(true)},
		FailOnRefusal:   ptr(true),
		ProposeRestored: ptr(false),
	}
	if !reflect.DeepEqual(b, wantB) {
		t.Errorf("target b:\n got %s\nwant %s", dump(b), dump(wantB))
	}
	if got := b.Branch(); got != "bot/b" {
		t.Errorf("branch %q", got)
	}
	if got := b.CheckName(); got != "driftback/b" {
		t.Errorf("check name %q", got)
	}
	if b.Owner() != "o" || b.RepoName() != "b" {
		t.Errorf("owner/name %q %q", b.Owner(), b.RepoName())
	}
	if a.AppliedRevision.Source() != RevisionHead || b.AppliedRevision.Source() != RevisionArgoCD {
		t.Errorf("sources %q %q", a.AppliedRevision.Source(), b.AppliedRevision.Source())
	}
	if c.Target("nope") != nil {
		t.Errorf("unknown target resolved")
	}
	if got := c.ResolvedTargets(); len(got) != 2 || !reflect.DeepEqual(got[1], wantB) {
		t.Errorf("ResolvedTargets %s", dump(got))
	}
	if c.Cluster("c") == nil || c.Cluster("x") != nil {
		t.Errorf("Cluster lookup")
	}

	// The resolved copy shares nothing with the config.
	b.Ignore[0].Path = "changed"
	b.PullRequest.Reviewers[0] = "changed"
	*b.PullRequest.Draft = false
	if again := c.Target("b"); !reflect.DeepEqual(again, wantB) {
		t.Errorf("resolving aliased the config: %s", dump(again))
	}
}

func TestBuiltInDefaults(t *testing.T) {
	c, err := Parse("d.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	tg := c.Target("shop")
	if tg.Appliers != nil || tg.PullRequest.BranchPrefix != "driftback/" ||
		*tg.PullRequest.Draft || !*tg.FailOnRefusal || tg.Ignore != nil || tg.Branch() != "driftback/shop" {
		t.Errorf("built-in defaults: %s", dump(tg))
	}
	// A Target built in Go, never resolved, still names its branch.
	if got := (&Target{Name: "x"}).Branch(); got != "driftback/x" {
		t.Errorf("branch %q", got)
	}
}

func TestKindsAllows(t *testing.T) {
	k := Kinds{Include: []string{"Deployment", "Service", "Kustomization.kustomize.toolkit.fluxcd.io"}, Exclude: []string{"Deployment.extensions"}}
	for _, tc := range []struct {
		group, kind string
		want        bool
	}{
		{"apps", "Deployment", true},
		{"extensions", "Deployment", false},
		{"", "Service", true},
		{"kustomize.toolkit.fluxcd.io", "Kustomization", true},
		{"kustomize.config.k8s.io", "Kustomization", false},
		{"", "ConfigMap", false},
	} {
		if got := k.Allows(tc.group, tc.kind); got != tc.want {
			t.Errorf("Allows(%q, %q) = %v", tc.group, tc.kind, got)
		}
	}
	if !(Kinds{Exclude: []string{"Event"}}).Allows("", "Pod") || (Kinds{Exclude: []string{"Event"}}).Allows("events.k8s.io", "Event") {
		t.Errorf("exclude only")
	}
}

func TestSelector(t *testing.T) {
	for _, s := range []string{
		"team=shop", "team==shop", "team!=shop", "team", "!legacy", "env in (prod,staging)", "env notin (a, b)",
		"team=shop,env in (prod),!legacy", "kubernetes.io/metadata.name", "app.kubernetes.io/part-of=shop", "x=", "env in ()",
		"replicas>1", // gt and lt are in the grammar the API server reads
	} {
		if err := checkSelector(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{
		"", "team=shop,", "=shop", "team shop", "env in prod", "env in (a", "Team_/x=1", "-team=1", "a=b=c", "a>b", "!", "team=-x", " ",
	} {
		if err := checkSelector(s); err == nil {
			t.Errorf("%q: accepted", s)
		}
	}
}

func TestRef(t *testing.T) {
	for _, s := range []string{"main", "release/1.2", "driftback/x"} {
		if err := checkRef(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "-x", "a..b", "a b", "a:b", "x.lock", "refs/heads/main", "a//b", "/a", "a/", ".a", "a/.b", "a@{1}"} {
		if err := checkRef(s); err == nil {
			t.Errorf("%q: accepted", s)
		}
	}
}

func TestSuggest(t *testing.T) {
	fs := fieldsOf(reflect.TypeFor[Target]())
	for key, want := range map[string]string{
		"rot": "root", "nmae": "name", "Repo": "repo", "repository": "repo", "namespace": "namespaces",
		"branch": "baseBranch", "draft": "pullRequest.draft", "include": "kinds.include", "zzzzzz": "",
	} {
		if got := suggest(key, fs); got != want {
			t.Errorf("suggest(%q) = %q, want %q", key, got, want)
		}
	}
}

func dump(v any) string { return fmt.Sprintf("%+v", deref(v)) }

func deref(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return rv.Elem().Interface()
	}
	return v
}

// Issue 54: a config of 10,000 written targets parses; a file whose
// aliases expand past the bound is refused by name, not decoded.
func TestConfigSizeBound(t *testing.T) {
	var b strings.Builder
	b.WriteString(strings.Split(base, "targets:\n")[0] + "targets:\n")
	for i := range 10000 {
		fmt.Fprintf(&b, "- name: app-%05d\n  repo: my-org/shop\n  root: apps/app-%05d\n  cluster: prod\n  namespaces: [app-%05d]\n  appliedRevision:\n    flux: {namespace: flux-system, name: app-%05d}\n", i, i, i, i)
	}
	cfg, err := Parse("big.yaml", []byte(b.String()))
	if err != nil || len(cfg.Targets) != 10000 {
		t.Fatalf("10,000 targets: %v", err)
	}
	// One list of 100,000 namespaces named by 11 targets: 1.1 million
	// values through aliases, from a file of 200 kB.
	ns := strings.Repeat("a, ", 99999) + "a"
	b.Reset()
	b.WriteString(strings.Split(base, "targets:\n")[0] + "targets:\n")
	for i := range 11 {
		list := "*ns"
		if i == 0 {
			list = "&ns [" + ns + "]"
		}
		fmt.Fprintf(&b, "- name: app-%d\n  repo: my-org/shop\n  root: apps/%d\n  cluster: prod\n  namespaces: %s\n  appliedRevision: {head: true}\n", i, i, list)
	}
	if _, err := Parse("aliases.yaml", []byte(b.String())); err == nil || !strings.Contains(err.Error(), "expands to more than 1000000 values") {
		t.Fatalf("1.1 million values through aliases: %v", err)
	}
}
