# Sourced by tools/kube-assets.sh and tools/flux-assets.sh: the part of a
# cached tool build they share. The caller defines die, current (is the
# build in $dest complete and stamped for these inputs?) and dest.
#
# assets_begin prints $dest and ends the script when the build is current.
# Otherwise it takes $dest/.lock (two test runs starting together must not
# build into each other), checks again under the lock, and makes $tmp, a
# scratch folder beside the final names that is removed at exit: the
# caller builds there and renames at the end, so an interrupted build
# leaves nothing that looks finished, and writes the stamp last.
assets_begin() {
	if current; then
		echo "$dest"
		exit 0
	fi
	mkdir -p "$dest" || die "cannot create $dest"
	exec 9>"$dest/.lock"
	if command -v flock >/dev/null; then
		flock 9
	fi
	if current; then
		echo "$dest"
		exit 0
	fi
	rm -rf "$dest"/.build.* # left by a build that was killed outright
	tmp="$(mktemp -d "$dest/.build.XXXXXX")"
	trap 'rm -rf "$tmp"' EXIT
	rm -f "$dest/.stamp"
}
