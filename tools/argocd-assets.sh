#!/usr/bin/env bash
# Builds Argo CD's application-controller and repo-server (pinned in
# tools/argocd/go.mod: github.com/argoproj/argo-cd/v3), and the kustomize
# and helm binaries the repo-server runs (tools/argocd/kustomize/go.mod, at
# the kustomize/api version the product uses; tools/argocd/helm/go.mod, the
# Helm version Argo CD's image ships) into a cache directory outside the repository,
# beside the CRDs the tests install, and prints that directory as the last
# line of stdout (what ARGOCD_ASSETS wants). Everything else goes to
# stderr. The build runs only when something is missing or tools/argocd has
# changed since the last build, so a second run returns at once.
# Measured here (two shared cores, modules already downloaded, empty Go build
# cache, -p 1): Argo CD and kustomize, beside a cold build of
# tools/kube-assets.sh, 1152 s wall (19 min); helm afterwards, beside a run
# of the test suite, about 14 minutes more. So about 35 minutes cold on a
# busy machine, less alone.
# With a warm cache, a few seconds.
#
# The folder holds:
#   argocd                          one binary (tools/argocd/main.go), and
#   argocd-application-controller   symlinks naming what it runs, as Argo
#   argocd-repo-server              CD's own image does
#   argocd-git-ask-pass
#   argocd-redis                    miniredis, standing in for Redis
#   kustomize, helm                 for the repo-server, on its PATH
#   crds/                           application-crd.yaml and appproject-crd.yaml
#                                   from Argo CD's module
#
# Argo CD v3.3.0 declares go 1.25.5, so the machine's Go builds it; no
# GOTOOLCHAIN is set. How internal/argotest runs it: internal/argotest/doc.go.
#
# Environment:
#   ARGOCD_ASSETS_DIR  where to put everything; default
#                      ${XDG_CACHE_HOME:-$HOME/.cache}/driftback/argocd-assets/<version>
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
moddir="$here/argocd"
kmoddir="$moddir/kustomize"
hmoddir="$moddir/helm"

die() {
	echo "argocd-assets: $*" >&2
	exit 1
}

command -v go >/dev/null || die "go is not on PATH"
command -v git >/dev/null || die "git is not on PATH (Argo CD's repo-server runs it)"
[[ -f "$moddir/go.mod" && -f "$kmoddir/go.mod" && -f "$hmoddir/go.mod" ]] || die "missing $moddir/go.mod, $kmoddir/go.mod or $hmoddir/go.mod"

export GOWORK=off
goa() { (cd "$moddir" && go "$@"); }
gok() { (cd "$kmoddir" && go "$@"); }
goh() { (cd "$hmoddir" && go "$@"); }

# The versions come from go.mod, so bumping them there is enough.
argo_version="$(goa list -m -f '{{.Version}}' github.com/argoproj/argo-cd/v3)" ||
	die "cannot read the Argo CD version from $moddir/go.mod"
k_version="$(gok list -m -f '{{.Version}}' sigs.k8s.io/kustomize/kustomize/v5)" ||
	die "cannot read the kustomize version from $kmoddir/go.mod"
h_version="$(goh list -m -f '{{.Version}}' helm.sh/helm/v3)" ||
	die "cannot read the Helm version from $hmoddir/go.mod"
for v in "$argo_version" "$k_version" "$h_version"; do
	[[ "$v" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "'$v' (Argo CD, kustomize or Helm) is not a release"
done

if [[ -n "${ARGOCD_ASSETS_DIR:-}" ]]; then
	dest="$ARGOCD_ASSETS_DIR"
else
	cache_root="${XDG_CACHE_HOME:-${HOME:?argocd-assets: neither XDG_CACHE_HOME nor HOME is set}/.cache}"
	dest="$cache_root/driftback/argocd-assets/$argo_version"
fi

crds=(application-crd.yaml appproject-crd.yaml)
links=(argocd-application-controller argocd-repo-server argocd-git-ask-pass argocd-redis)

# A build is current when its stamp matches everything that went into it.
stamp="$(
	{
		cat "$moddir/go.mod" "$moddir/go.sum" "$moddir/main.go" "$kmoddir/go.mod" "$kmoddir/go.sum" "$hmoddir/go.mod" "$hmoddir/go.sum"
		echo "${crds[*]} ${links[*]}"
		go env GOVERSION GOOS GOARCH
	} | sha256sum | cut -d' ' -f1
)"

current() {
	[[ -x "$dest/argocd" && -x "$dest/kustomize" && -x "$dest/helm" && -f "$dest/.stamp" ]] || return 1
	local f
	for f in "${links[@]}"; do
		[[ -L "$dest/$f" ]] || return 1
	done
	for f in "${crds[@]}"; do
		[[ -f "$dest/crds/$f" ]] || return 1
	done
	[[ "$(cat "$dest/.stamp")" == "$stamp" ]]
}

# shellcheck source=assets-cache.sh
. "$here/assets-cache.sh"
assets_begin

echo "argocd-assets: building Argo CD $argo_version, kustomize $k_version and Helm $h_version into $dest (about 35 minutes cold on a busy machine)" >&2
start=$SECONDS

# -p 1: the machines have two cores, shared with whatever else runs.
if ! (cd "$moddir" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly" \
	go build -p 1 -trimpath -o "$tmp/argocd" .) >&2; then
	die "building Argo CD from $moddir failed (see the go build output above)"
fi
if ! (cd "$kmoddir" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly" \
	go build -p 1 -trimpath -o "$tmp/kustomize" sigs.k8s.io/kustomize/kustomize/v5) >&2; then
	die "building kustomize from $kmoddir failed (see the go build output above)"
fi
if ! (cd "$hmoddir" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly" \
	go build -p 1 -trimpath -ldflags "-X helm.sh/helm/v3/internal/version.version=$h_version" \
		-o "$tmp/helm" helm.sh/helm/v3/cmd/helm) >&2; then
	die "building helm from $hmoddir failed (see the go build output above)"
fi
for f in "${links[@]}"; do
	ln -s argocd "$tmp/$f"
done
"$tmp/argocd-application-controller" --help >/dev/null 2>&1 || die "the new application-controller does not run"
"$tmp/argocd-repo-server" --help >/dev/null 2>&1 || die "the new repo-server does not run"
got="$("$tmp/kustomize" version 2>&1)" || die "the new kustomize does not run: $got"
[[ "$got" == *"$k_version"* ]] || echo "argocd-assets: kustomize reports '$got' (built from $k_version)" >&2
got="$("$tmp/helm" version --short 2>&1)" || die "the new helm does not run: $got"
[[ "$got" == "$h_version"* ]] || die "the new helm reports '$got', want $h_version"

argo_dir="$(goa list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)"
[[ -d "$argo_dir" ]] || die "cannot find the Argo CD module ($argo_dir)"
mkdir -p "$tmp/crds"
for c in "${crds[@]}"; do
	[[ -f "$argo_dir/manifests/crds/$c" ]] || die "missing CRD $argo_dir/manifests/crds/$c"
	cp "$argo_dir/manifests/crds/$c" "$tmp/crds/$c"
	chmod 0644 "$tmp/crds/$c" # the module cache's files are read-only
done

rm -rf "$dest/crds"
mv -f "$tmp/crds" "$dest/crds"
for f in argocd kustomize helm "${links[@]}"; do
	mv -f "$tmp/$f" "$dest/$f"
done
echo "$stamp" >"$dest/.stamp.tmp"
mv -f "$dest/.stamp.tmp" "$dest/.stamp"
echo "argocd-assets: built in $((SECONDS - start))s" >&2

echo "$dest"
