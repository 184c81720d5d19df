#!/usr/bin/env bash
# Builds the kube-apiserver, etcd and kubectl pinned in tools/k8s/go.mod into a cache
# directory outside the repository, and prints that directory as the last
# line of stdout (the shape KUBEBUILDER_ASSETS wants). Everything else goes
# to stderr. The build runs only when a binary is missing or tools/k8s has
# changed since the last build, so a second run returns at once. A cold build
# is about 17 CPU-minutes (14 min wall on two shared cores) and its largest
# single process peaks near 2.7 GB; with a warm Go build cache it is about
# 20 s of linking.
#
# Environment:
#   KUBE_ASSETS_DIR  where to put the binaries; default
#                    ${XDG_CACHE_HOME:-$HOME/.cache}/driftback/kube-assets/<kube version>
#
# The flag set below was run against these binaries and works: /readyz says
# ok, /version reports gitVersion v1.37.2, and a ConfigMap POST returns 201.
# Everything listens on 127.0.0.1 only. P1, P2, P3 are free ports and $D is a
# fresh temporary directory.
#
#   etcd --name=test --data-dir=$D/etcd \
#     --listen-client-urls=http://127.0.0.1:P1 \
#     --advertise-client-urls=http://127.0.0.1:P1 \
#     --listen-peer-urls=http://127.0.0.1:P2 \
#     --initial-advertise-peer-urls=http://127.0.0.1:P2 \
#     --initial-cluster=test=http://127.0.0.1:P2 \
#     --unsafe-no-fsync --log-level=warn
#   etcd 3.7 also starts without the two initial-* flags; they are there so
#   that its member list names the loopback peer URL and not the default
#   localhost:2380. --unsafe-no-fsync is for tests only. Ready when
#   GET http://127.0.0.1:P1/health has "health":"true" (under a second).
#
#   openssl genrsa -out $D/sa.key 2048
#   echo "$TOKEN,admin,admin-uid,system:masters" > $D/tokens.csv
#   kube-apiserver \
#     --etcd-servers=http://127.0.0.1:P1 \
#     --bind-address=127.0.0.1 --secure-port=P3 \
#     --advertise-address=127.0.0.1 --endpoint-reconciler-type=none \
#     --cert-dir=$D/certs \
#     --token-auth-file=$D/tokens.csv \
#     --authorization-mode=RBAC \
#     --service-account-issuer=https://kubernetes.default.svc \
#     --service-account-key-file=$D/sa.key \
#     --service-account-signing-key-file=$D/sa.key \
#     --service-cluster-ip-range=10.0.0.0/24 \
#     --disable-admission-plugins=ServiceAccount \
#     --allow-privileged=true
#   Notes:
#   - --advertise-address=127.0.0.1 fails at startup ("may not be in the
#     loopback range") unless --endpoint-reconciler-type=none. Leaving the
#     address out instead makes the apiserver pick the host's own interface.
#   - --cert-dir makes the apiserver write a self-signed apiserver.crt/.key
#     there; clients can skip verification or trust $D/certs/apiserver.crt
#     (it is valid for 127.0.0.1).
#   - The system:masters group in the token file is what RBAC lets do
#     anything; with no token a request is anonymous and gets 403.
#   - ServiceAccount admission is disabled because no controller manager
#     runs to create the "default" service accounts: with it enabled, every
#     pod POST gets 403 "serviceaccount \"default\" not found".
#     --allow-privileged only matters for pods that ask for it.
#   - Ready when GET https://127.0.0.1:P3/readyz with
#     "Authorization: Bearer $TOKEN" returns "ok", about 3-6 s after start.
#   - Stop kube-apiserver first (SIGTERM, wait: about 1 s), then etcd. With
#     etcd gone first, the apiserver was still running 60 s after SIGTERM,
#     retrying its etcd connections.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
moddir="$here/k8s"

die() {
	echo "kube-assets: $*" >&2
	exit 1
}

command -v go >/dev/null || die "go is not on PATH"
[[ -f "$moddir/go.mod" ]] || die "missing $moddir/go.mod"

# The Kubernetes version comes from go.mod, so bumping it there is enough.
kube_version="$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$moddir/go.mod")"
[[ "$kube_version" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]] ||
	die "cannot read a k8s.io/kubernetes release version from $moddir/go.mod (got '$kube_version')"
kube_major="${BASH_REMATCH[1]}"
kube_minor="${BASH_REMATCH[2]}"

if [[ -n "${KUBE_ASSETS_DIR:-}" ]]; then
	dest="$KUBE_ASSETS_DIR"
else
	cache_root="${XDG_CACHE_HOME:-${HOME:?kube-assets: neither XDG_CACHE_HOME nor HOME is set}/.cache}"
	dest="$cache_root/driftback/kube-assets/$kube_version"
fi

# Without these the binaries report v0.0.0-master, and clients that check the
# server version (and /version in tests) see nonsense. Kubernetes' own build
# sets the same variables in both packages.
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$kube_version"
	ldflags+=" -X $pkg.gitMajor=$kube_major"
	ldflags+=" -X $pkg.gitMinor=$kube_minor"
	ldflags+=" -X $pkg.gitTreeState=clean"
done
ldflags="${ldflags# }"

# A build is current when its stamp matches everything that went into it.
stamp="$(
	{
		cat "$moddir/go.mod" "$moddir/go.sum" "$moddir/etcd/main.go"
		echo "$ldflags"
		go env GOVERSION GOOS GOARCH
	} | sha256sum | cut -d' ' -f1
)"

current() {
	[[ -x "$dest/kube-apiserver" && -x "$dest/etcd" && -x "$dest/kubectl" && -f "$dest/.stamp" ]] &&
		[[ "$(cat "$dest/.stamp")" == "$stamp" ]]
}

# shellcheck source=assets-cache.sh
. "$here/assets-cache.sh"
assets_begin

echo "kube-assets: building kube-apiserver, etcd and kubectl $kube_version into $dest (a few minutes cold)" >&2
start=$SECONDS
# One go build for all three: they share most of their dependencies. kubectl
# is the real client the attribution tests drive (kubectl edit, scale, set
# image, apply --server-side), so the field managers and user agents the
# apiserver records are kubectl's own.
# -p 2: the machines have two cores and the build peaks near 2.5 GB.
if ! (
	cd "$moddir" &&
		GOWORK=off CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly" \
			go build -p 2 -trimpath -ldflags "$ldflags" -o "$tmp/" \
			k8s.io/kubernetes/cmd/kube-apiserver \
			k8s.io/kubernetes/cmd/kubectl \
			github.com/driftback/driftback/tools/k8s/etcd
) >&2; then
	die "building kube-apiserver/etcd/kubectl from $moddir failed (see the go build output above)"
fi
for bin in kube-apiserver etcd kubectl; do
	[[ -x "$tmp/$bin" ]] || die "go build succeeded but $tmp/$bin is missing"
done

# A binary that cannot even print its version is not worth caching.
got="$("$tmp/kube-apiserver" --version 2>&1)" ||
	die "the new kube-apiserver does not run: $got"
[[ "$got" == "Kubernetes $kube_version" ]] ||
	die "the new kube-apiserver reports '$got', want 'Kubernetes $kube_version'"
"$tmp/etcd" --version >/dev/null 2>&1 || die "the new etcd does not run"
got="$("$tmp/kubectl" version --client 2>&1)" ||
	die "the new kubectl does not run: $got"
[[ "$got" == *"Client Version: $kube_version"* ]] ||
	die "the new kubectl reports '$got', want 'Client Version: $kube_version'"

mv -f "$tmp/kube-apiserver" "$dest/kube-apiserver"
mv -f "$tmp/etcd" "$dest/etcd"
mv -f "$tmp/kubectl" "$dest/kubectl"
echo "$stamp" >"$dest/.stamp.tmp"
mv -f "$dest/.stamp.tmp" "$dest/.stamp"
echo "kube-assets: built in $((SECONDS - start))s" >&2

echo "$dest"
