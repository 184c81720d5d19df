#!/usr/bin/env bash
# Builds Flux's kustomize-controller (pinned in tools/flux/go.mod),
# source-controller (pinned in tools/flux/source-controller/go.mod) and
# helm-controller (pinned in tools/flux/helm-controller/go.mod), the last two
# modules of their own so that none moves another's dependency versions,
# into a cache directory outside the repository, beside the CRDs the tests
# install, and prints that directory as the last line of stdout (what
# FLUX_ASSETS wants). Everything else goes to stderr. The build runs only
# when something is missing or tools/flux has changed since the last build,
# so a second run returns at once. Measured here (two shared cores):
# kustomize-controller alone, cold (empty Go build cache, -p 1), took 9 min
# wall (538 s; about 7 CPU-minutes) including the stand-ins' tests. Adding
# source-controller, with the build cache already warm for what it shares
# with kustomize-controller, took 5 min wall more (305 s, -p 2; about 4.5
# CPU-minutes: cosign, sigstore, helm, go-git, oras...). Both from cold
# (empty Go build cache, modules already downloaded, -p 1, beside a run of
# the test suite): 674 s. Adding helm-controller, with the build cache warm
# for the other two (most of its modules are at other versions than theirs,
# so compiled anew), -p 1, beside other builds: 644 s wall (about 7.3
# CPU-minutes); then this script, all three and the stand-ins' tests, with
# a warm cache: 62 s.
#
# The folder holds:
#   kustomize-controller   the binaries
#   source-controller
#   helm-controller
#   crds/                  kustomize.toolkit.fluxcd.io_kustomizations.yaml from
#                          the kustomize-controller module, every source
#                          kind (GitRepository, OCIRepository, Bucket,
#                          HelmRepository, HelmChart, ExternalArtifact) from
#                          source-controller's module, and
#                          helm.toolkit.fluxcd.io_helmreleases.yaml from
#                          helm-controller's: the controllers' watches
#                          fail to start on a kind the apiserver does not know.
#
# Both v1.10.1 controllers need Go 1.27, so this script (and only it) sets
# GOTOOLCHAIN; the module proxy serves that toolchain. helm-controller is
# v1.6.4, not the v1.7.1 of the same Flux release, which the proxy refuses
# whole (tools/flux/README.md). Seven modules are stand-ins and four more
# are replaced by neighbour versions, see tools/flux/README.md; the
# stand-ins' tests run before the build.
#
# Environment:
#   FLUX_ASSETS_DIR  where to put everything; default
#                    ${XDG_CACHE_HOME:-$HOME/.cache}/driftback/flux-assets/<version>
#
# How internal/fluxtest runs it (flags from its main.go), with P1 and P2 free
# ports and KUBECONFIG naming the test apiserver:
#   RUNTIME_NAMESPACE=flux-system kustomize-controller \
#     --metrics-addr=127.0.0.1:P1 --health-addr=127.0.0.1:P2 \
#     --watch-all-namespaces=true --enable-leader-election=false \
#     --events-addr= --log-encoding=console
#   Ready when GET http://127.0.0.1:P2/readyz says ok. helm-controller
#   with the same flags; source-controller likewise, plus
#   --storage-path=DIR --storage-addr=127.0.0.1:P3
#   --storage-adv-addr=127.0.0.1:P3 (where the other two download).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
moddir="$here/flux"
scmoddir="$moddir/source-controller"
hcmoddir="$moddir/helm-controller"
toolchain=go1.27.3

die() {
	echo "flux-assets: $*" >&2
	exit 1
}

command -v go >/dev/null || die "go is not on PATH"
for m in "$moddir" "$scmoddir" "$hcmoddir"; do
	[[ -f "$m/go.mod" ]] || die "missing $m/go.mod"
done

export GOWORK=off GOTOOLCHAIN="$toolchain"
gof() { (cd "$moddir" && go "$@"); }
gosc() { (cd "$scmoddir" && go "$@"); }
gohc() { (cd "$hcmoddir" && go "$@"); }

# The versions come from go.mod, so bumping them there is enough.
kc_version="$(gof list -m -f '{{.Version}}' github.com/fluxcd/kustomize-controller)" ||
	die "cannot read the kustomize-controller version from $moddir/go.mod"
sc_version="$(gosc list -m -f '{{.Version}}' github.com/fluxcd/source-controller)" ||
	die "cannot read the source-controller version from $scmoddir/go.mod"
hc_version="$(gohc list -m -f '{{.Version}}' github.com/fluxcd/helm-controller)" ||
	die "cannot read the helm-controller version from $hcmoddir/go.mod"
for v in "$kc_version" "$sc_version" "$hc_version"; do
	[[ "$v" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
		die "'$v' (kustomize-controller $kc_version, source-controller $sc_version, helm-controller $hc_version) is not a release"
done

if [[ -n "${FLUX_ASSETS_DIR:-}" ]]; then
	dest="$FLUX_ASSETS_DIR"
else
	cache_root="${XDG_CACHE_HOME:-${HOME:?flux-assets: neither XDG_CACHE_HOME nor HOME is set}/.cache}"
	dest="$cache_root/driftback/flux-assets/$kc_version"
fi

crds=(
	kustomize.toolkit.fluxcd.io_kustomizations.yaml
	source.toolkit.fluxcd.io_gitrepositories.yaml
	source.toolkit.fluxcd.io_ocirepositories.yaml
	source.toolkit.fluxcd.io_buckets.yaml
	source.toolkit.fluxcd.io_externalartifacts.yaml
	source.toolkit.fluxcd.io_helmrepositories.yaml
	source.toolkit.fluxcd.io_helmcharts.yaml
	helm.toolkit.fluxcd.io_helmreleases.yaml
)

# A build is current when its stamp matches everything that went into it.
stamp="$(
	{
		cat "$moddir/go.mod" "$moddir/go.sum" "$scmoddir/go.mod" "$scmoddir/go.sum" "$hcmoddir/go.mod" "$hcmoddir/go.sum"
		(cd "$moddir" && find standin -type f | LC_ALL=C sort | xargs cat)
		echo "$toolchain $sc_version $hc_version ${crds[*]}"
		go env GOOS GOARCH
	} | sha256sum | cut -d' ' -f1
)"

current() {
	[[ -x "$dest/kustomize-controller" && -x "$dest/source-controller" && -x "$dest/helm-controller" && -f "$dest/.stamp" ]] || return 1
	local c
	for c in "${crds[@]}"; do
		[[ -f "$dest/crds/$c" ]] || return 1
	done
	[[ "$(cat "$dest/.stamp")" == "$stamp" ]]
}

# shellcheck source=assets-cache.sh
. "$here/assets-cache.sh"
assets_begin

echo "flux-assets: building kustomize-controller $kc_version, source-controller $sc_version and helm-controller $hc_version into $dest (about 15 minutes cold)" >&2
start=$SECONDS

(gof test -p 1 -count=1 github.com/fluxcd/pkg/http/fetch github.com/fluxcd/pkg/masktoken) >&2 ||
	die "the stand-in modules' tests failed"
(gosc test -p 1 -count=1 github.com/fluxcd/pkg/lockedfile github.com/opencontainers/go-digest/blake3 \
	github.com/mozillazg/docker-credential-acr-helper/pkg/acr) >&2 ||
	die "the stand-in modules' tests failed"

# build_controller MODDIR PACKAGE NAME builds one controller into $tmp and
# checks that it runs. -p 1: the machines have two cores, shared.
build_controller() {
	if ! (
		cd "$1" &&
			CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly" \
				go build -p 1 -trimpath -o "$tmp/" "$2"
	) >&2; then
		die "building $3 from $1 failed (see the go build output above)"
	fi
	[[ -x "$tmp/$3" ]] || die "go build succeeded but $tmp/$3 is missing"
	"$tmp/$3" --help >/dev/null 2>&1 || die "the new $3 does not run"
}
build_controller "$moddir" github.com/fluxcd/kustomize-controller kustomize-controller
build_controller "$scmoddir" github.com/fluxcd/source-controller source-controller
build_controller "$hcmoddir" github.com/fluxcd/helm-controller helm-controller

kc_dir="$(gof list -m -f '{{.Dir}}' github.com/fluxcd/kustomize-controller)"
sc_dir="$(gosc list -m -f '{{.Dir}}' github.com/fluxcd/source-controller)"
hc_dir="$(gohc list -m -f '{{.Dir}}' github.com/fluxcd/helm-controller)"
[[ -d "$kc_dir" && -d "$sc_dir" && -d "$hc_dir" ]] ||
	die "cannot find the kustomize-controller ($kc_dir), source-controller ($sc_dir) or helm-controller ($hc_dir) module"
mkdir -p "$tmp/crds"
for c in "${crds[@]}"; do
	case "$c" in
	kustomize.*) src="$kc_dir/config/crd/bases/$c" ;;
	helm.*) src="$hc_dir/config/crd/bases/$c" ;;
	*) src="$sc_dir/config/crd/bases/$c" ;;
	esac
	[[ -f "$src" ]] || die "missing CRD $src"
	cp "$src" "$tmp/crds/$c"
	chmod 0644 "$tmp/crds/$c" # the module cache's files are read-only
done

rm -rf "$dest/crds"
mv -f "$tmp/crds" "$dest/crds"
mv -f "$tmp/kustomize-controller" "$dest/kustomize-controller"
mv -f "$tmp/source-controller" "$dest/source-controller"
mv -f "$tmp/helm-controller" "$dest/helm-controller"
echo "$stamp" >"$dest/.stamp.tmp"
mv -f "$dest/.stamp.tmp" "$dest/.stamp"
echo "flux-assets: built in $((SECONDS - start))s" >&2

echo "$dest"
