package main

import (
	"embed"
	"os"

	"github.com/driftback/driftback/commands"
)

// Set at build time (tools/image builds with -ldflags "-X main.version=v1.2.3
// -X main.commit=SHA -X main.date=RFC3339"). A plain go build or go install
// keeps these placeholders, and `driftback version` reads the module version
// and the vcs.* settings the Go toolchain recorded instead.
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

// The embedded default of `driftback demo`: small repositories and the live
// objects of clusters that drifted from them. Embedded here, beside them;
// all: keeps the files a chart needs whose names start with _ or .
// (templates/_helpers.tpl, .helmignore), which embed leaves out otherwise.
//
//go:embed all:examples
var examples embed.FS

// The App manifest `driftback app create` registers (DESIGN §12).
//
//go:embed app.yaml
var appManifest []byte

func main() {
	bin := commands.Binary{Version: version, Commit: commit, Date: date, Examples: examples, AppManifest: appManifest}
	os.Exit(commands.Execute(bin, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
