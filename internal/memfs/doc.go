// Package memfs is an in-memory kustomize filesystem that holds every name a
// disk checkout can hold.
//
// kustomize's own in-memory filesystem (filesys.MakeFsInMemory) refuses on
// creation any file or folder name outside [a-zA-Z0-9-_.:] and any name
// containing "..", so a folder called "ha-1.21+", "v2@edge" or "team a"
// cannot even be written into it, while `kustomize build` reads it from disk
// without complaint. This filesystem answers every call the way kustomize's
// on-disk filesystem does for a tree rooted at "/" with no symlinks: names
// are any bytes but "/" and NUL, paths are cleaned lexically, and relative
// paths are taken from "/". The load restrictions stay kustomize's own (the
// loader checks every path against its root through CleanedAbs); nothing
// here can reach outside the tree it was given.
//
// It imports no driftback package.
package memfs
