package githubtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

func (c *call) tarball() *reply {
	rev := c.params["ref"]
	if rev == "" {
		rev = c.repo.defaultBranch
	}
	h, ok := c.repo.git.resolve(rev)
	if !ok {
		return errReply(http.StatusNotFound, "Not Found")
	}
	// Like codeload: a short-lived token in the URL, no header needed.
	tok := randomToken("")
	c.s.downloads[tok] = download{repo: c.repo, sha: h, expires: c.s.opts.Clock().Add(5 * time.Minute)}
	loc := fmt.Sprintf("%s/_codeload/%s/%s/legacy.tar.gz/%s?token=%s", c.s.URL(), c.repo.owner, c.repo.name, url.PathEscape(rev), tok)
	rep := &reply{status: http.StatusFound, header: http.Header{}}
	rep.header.Set("Location", loc)
	return rep
}

func (c *call) codeload() *reply {
	d, ok := c.s.downloads[c.r.URL.Query().Get("token")]
	if !ok || !c.s.opts.Clock().Before(d.expires) || !strings.EqualFold(d.repo.owner, c.params["owner"]) ||
		!strings.EqualFold(d.repo.name, c.params["repo"]) {
		return errReply(http.StatusNotFound, "Not Found")
	}
	data, err := d.repo.git.tarball(d.repo.owner, d.repo.name, d.sha)
	if err != nil {
		return errReply(http.StatusInternalServerError, err.Error())
	}
	rep := &reply{status: http.StatusOK, header: http.Header{}, body: data}
	rep.header.Set("Content-Type", "application/x-gzip")
	rep.header.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%s-%s-%s.tar.gz", d.repo.owner, d.repo.name, d.sha.String()[:7]))
	return rep
}

// tarball writes the tree of commit h as GitHub serves it: gzip'd tar,
// pax comment with the commit sha, every path under {owner}-{repo}-{short}/.
func (g *store) tarball(owner, repo string, h plumbing.Hash) ([]byte, error) {
	c, err := g.commit(h)
	if err != nil {
		return nil, err
	}
	prefix := fmt.Sprintf("%s-%s-%s/", owner, repo, h.String()[:7])
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	when := c.Committer.When.UTC()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header",
		PAXRecords: map[string]string{"comment": h.String()}, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o775, ModTime: when, Format: tar.FormatPAX})
	}
	if err := dir(prefix); err != nil {
		return nil, err
	}
	var walk func(p string, th plumbing.Hash) error
	walk = func(p string, th plumbing.Hash) error {
		t, err := g.tree(th)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			name := p + e.Name
			switch e.Mode {
			case filemode.Dir:
				if err := dir(name + "/"); err != nil {
					return err
				}
				if err := walk(name+"/", e.Hash); err != nil {
					return err
				}
			case filemode.Submodule:
				if err := dir(name + "/"); err != nil {
					return err
				}
			default:
				data, _ := g.blob(e.Hash)
				hdr := &tar.Header{Name: name, Mode: 0o664, Size: int64(len(data)), ModTime: when, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
				if e.Mode == filemode.Executable {
					hdr.Mode = 0o775
				}
				if e.Mode == filemode.Symlink {
					hdr = &tar.Header{Name: name, Mode: 0o777, Linkname: string(data), ModTime: when, Typeflag: tar.TypeSymlink, Format: tar.FormatPAX}
					data = nil
				}
				if err := tw.WriteHeader(hdr); err != nil {
					return err
				}
				if _, err := tw.Write(data); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(prefix, c.TreeHash); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
