// Command image builds the driftback container image without a Docker
// daemon and without pulling a base image: for each platform it cross-compiles
// the static binary, and puts it, a CA bundle and a minimal /etc on an empty
// base as OCI layers. The platform images go into one OCI image index,
// written as an OCI image layout directory (and, with -push, to a registry).
//
// The same inputs give the same bytes: the Go build is reproducible
// (-trimpath, no VCS stamping, no build id), every file in a layer and the
// image config carry the build date as their time, layers are written in a
// fixed order, and the CA bundle comes from a pinned Go module rather than
// from whatever the build machine has installed.
//
//	bash tools/image.sh                          # dist/image, dist/bin
//	bash tools/image.sh -push ghcr.io/driftback/driftback:v0.2.0
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.Repo, "repo", ".", "the driftback module root (where its go.mod is)")
	flag.StringVar(&o.Out, "out", "dist/image", "write the OCI image layout here (replaced)")
	flag.StringVar(&o.BinDir, "bin", "dist/bin", "keep the binaries here, one per platform (driftback_OS_ARCH)")
	flag.StringVar(&o.Version, "version", "", "version printed by `driftback version` (default: git describe, or dev)")
	flag.StringVar(&o.Commit, "commit", "", "commit printed by `driftback version` (default: git rev-parse HEAD)")
	flag.StringVar(&o.Date, "date", "", "build date, RFC 3339 (default: SOURCE_DATE_EPOCH, else the commit's date); also every file's time in the image")
	platforms := flag.String("platforms", strings.Join(defaultPlatforms, ","), "comma-separated OS/ARCH list")
	push := flag.String("push", "", "also push the index to this registry reference (REGISTRY/REPO:TAG), with the credentials docker login stored")
	digestFile := flag.String("digest-file", "", "write the index digest (sha256:...) to this file")
	flag.Parse()
	o.Platforms = strings.Split(*platforms, ",")
	if err := o.fillDefaults(); err != nil {
		fatal(err)
	}
	res, err := build(o)
	if err != nil {
		fatal(err)
	}
	digest := res.Digest.String()
	if *push != "" {
		if digest, err = pushIndex(res.Index, *push); err != nil {
			fatal(err)
		}
	}
	if *digestFile != "" {
		if err := os.WriteFile(*digestFile, []byte(digest+"\n"), 0o644); err != nil {
			fatal(err)
		}
	}
	fmt.Printf("driftback %s (commit %s, built %s)\n", o.Version, o.Commit, o.Date)
	for _, b := range res.Binaries {
		fmt.Println("binary", b)
	}
	fmt.Println("layout", o.Out)
	fmt.Println("digest", digest)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "image:", err)
	os.Exit(1)
}

// fillDefaults takes the version, commit and date from git where not given,
// so that one commit always builds the same image.
func (o *options) fillDefaults() error {
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", o.Repo}, args...)...).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	if o.Version == "" {
		o.Version = git("describe", "--tags", "--always", "--dirty")
		if o.Version == "" {
			o.Version = "dev"
		}
	}
	if o.Commit == "" {
		o.Commit = git("rev-parse", "HEAD")
		if o.Commit == "" {
			o.Commit = "unknown"
		}
	}
	if o.Date == "" {
		if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
			var sec int64
			if _, err := fmt.Sscan(s, &sec); err != nil {
				return fmt.Errorf("SOURCE_DATE_EPOCH %q: %v", s, err)
			}
			o.Date = time.Unix(sec, 0).UTC().Format(time.RFC3339)
		} else if d := git("log", "-1", "--format=%cI"); d != "" {
			o.Date = d
		} else {
			o.Date = time.Unix(0, 0).UTC().Format(time.RFC3339)
		}
	}
	t, err := time.Parse(time.RFC3339, o.Date)
	if err != nil {
		return fmt.Errorf("-date %q: %v", o.Date, err)
	}
	o.Date = t.UTC().Format(time.RFC3339)
	abs, err := filepath.Abs(o.Repo)
	if err != nil {
		return err
	}
	o.Repo = abs
	return nil
}
