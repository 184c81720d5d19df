package helm

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"

	"github.com/driftback/driftback/internal/repofs"
)

// Chart is a chart's files, as Helm's loader reads them. Helm's dependency
// processing edits the loaded chart (it drops the subcharts whose condition
// is false), so every render loads a fresh copy from these files.
type Chart struct {
	files         []*archive.BufferedFile
	name, version string
}

// Name is the chart's name (Chart.yaml's name).
func (c *Chart) Name() string { return c.name }

// Version is the chart's version (Chart.yaml's version).
func (c *Chart) Version() string { return c.version }

// ChartFromDir reads the chart in folder dir of repo as `helm template dir`
// reads a folder: the top .helmignore (with Helm's default rules) leaves
// files out, and subcharts under charts/ may be folders or .tgz archives.
// A symlink in the chart or a file whose bytes the snapshot did not keep is
// an error: Helm would read what the snapshot cannot show.
func ChartFromDir(repo *repofs.Repo, dir string) (*Chart, error) {
	top, err := repofs.Clean(dir)
	if err != nil {
		return nil, err
	}
	if l, ok := repo.Symlink(top); ok {
		return nil, fmt.Errorf("chart %s: %s is a symlink", top, l)
	}
	if !repo.IsDir(top) {
		return nil, fmt.Errorf("chart %s: no such folder", top)
	}
	rules := ignore.Empty()
	if b, ok := repo.File(path.Join(top, ignore.HelmIgnore)); ok {
		if rules, err = ignore.Parse(bytes.NewReader(b)); err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", top, ignore.HelmIgnore, err)
		}
	}
	rules.AddDefaults()
	var files []*archive.BufferedFile
	var walk func(rel string) error
	walk = func(rel string) error {
		for _, e := range repo.List(path.Join(top, rel)) {
			name, isDir := strings.CutSuffix(e, "/")
			n := path.Join(rel, name)
			if rules.Ignore(n, entryInfo{name: name, dir: isDir}) {
				continue
			}
			full := path.Join(top, n)
			if _, ok := repo.Symlink(full); ok {
				return fmt.Errorf("chart %s: %s is a symlink", top, n)
			}
			if isDir {
				if err := walk(n); err != nil {
					return err
				}
				continue
			}
			b, ok := repo.File(full)
			if !ok {
				return fmt.Errorf("chart %s: the bytes of %s were not kept", top, n)
			}
			files = append(files, &archive.BufferedFile{Name: n, Data: b})
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, err
	}
	return chartFromFiles(files, top)
}

// ChartFromArchive reads a packaged chart (.tgz), as Flux's
// source-controller serves a HelmChart's artifact and as `helm template
// chart.tgz` reads it.
func ChartFromArchive(tgz []byte) (*Chart, error) {
	files, err := archive.LoadArchiveFiles(bytes.NewReader(tgz))
	if err != nil {
		return nil, fmt.Errorf("chart archive: %w", err)
	}
	return chartFromFiles(files, "archive")
}

func chartFromFiles(files []*archive.BufferedFile, where string) (*Chart, error) {
	c := &Chart{files: files}
	ch, err := c.load()
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", where, err)
	}
	c.name = ch.Name()
	if ch.Metadata != nil {
		c.version = ch.Metadata.Version
	}
	return c, nil
}

// load builds a fresh Helm chart from the files.
func (c *Chart) load() (*chart.Chart, error) {
	files := make([]*archive.BufferedFile, len(c.files))
	for i, f := range c.files {
		cp := *f
		files[i] = &cp
	}
	return loader.LoadFiles(files)
}

// entryInfo is the little of os.FileInfo Helm's ignore rules read.
type entryInfo struct {
	name string
	dir  bool
}

func (e entryInfo) Name() string { return e.name }
func (e entryInfo) Size() int64  { return 0 }
func (e entryInfo) Mode() fs.FileMode {
	if e.dir {
		return fs.ModeDir
	}
	return 0
}
func (e entryInfo) ModTime() time.Time { return time.Time{} }
func (e entryInfo) IsDir() bool        { return e.dir }
func (e entryInfo) Sys() any           { return nil }

var _ os.FileInfo = entryInfo{}
