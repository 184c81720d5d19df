package installtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// ReadSetupPage reads `driftback app create`'s output until it announces
// its setup page, and returns the page's URL. Every line read, and every
// line after it, is copied to out; done is closed once r ends.
func ReadSetupPage(r io.Reader, out io.Writer) (page string, done <-chan struct{}, err error) {
	sc := bufio.NewScanner(r)
	for page == "" && sc.Scan() {
		fmt.Fprintln(out, sc.Text())
		page = setupPageURL.FindString(sc.Text())
	}
	if page == "" {
		return "", nil, fmt.Errorf("app create announced no setup page (%v)", sc.Err())
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for sc.Scan() {
			fmt.Fprintln(out, sc.Text())
		}
	}()
	return page, finished, nil
}

var setupPageURL = regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)

// Browse does what a person's browser does with app create's setup page:
// open it, submit its form to GitHub, and follow GitHub's redirect back
// to the command's callback. It returns the last page's status and body.
func Browse(t testing.TB, page string) (status int, body string) {
	t.Helper()
	res, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	action := regexp.MustCompile(`action="([^"]+)"`).FindStringSubmatch(string(b))
	manifest := regexp.MustCompile(`name="manifest" value="([^"]+)"`).FindStringSubmatch(string(b))
	if action == nil || manifest == nil {
		t.Fatalf("no manifest form on the setup page:\n%s", b)
	}
	res, err = http.PostForm(html.UnescapeString(action[1]), url.Values{"manifest": {html.UnescapeString(manifest[1])}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	return res.StatusCode, string(b)
}

// CreateApp walks the blocks of a page's step that creates the App
// (docs/install.md's step 1, README's short version) in dir as a person
// does: the page's `driftback app create` runs as binary, with the page's
// placeholders filled in (ORG is the config's owner, APPNAME a name of
// the user's), pointed at the world's GitHub as at a GitHub Enterprise
// (--github-url and --api-url, the one thing only the walk adds); the
// setup page it prints is opened and its form confirmed on GitHub as in a
// browser, and the command writes its files into dir. A block the page
// marks as not run (NotRunMark: the Secret from a key downloaded by hand)
// is skipped, and logged; any other command fails the walk.
func (w *World) CreateApp(t testing.TB, binary, dir string, step []Block) {
	t.Helper()
	ran := 0
	for _, b := range step {
		if b.Lang != "sh" {
			continue
		}
		if why := NotRun(b); why != "" {
			t.Logf("%s: not run: %s", b, why)
			continue
		}
		cmds, err := Commands(strings.NewReplacer("ORG", w.owner, "APPNAME", w.owner+"-driftback").Replace(b.Text))
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for _, c := range cmds {
			if len(c) < 3 || !slices.Equal(c[:3], []string{"driftback", "app", "create"}) {
				t.Fatalf("%s: the walk of the App's creation runs driftback app create, not %q", b, c)
			}
			w.appCreate(t, binary, dir, c[1:])
			ran++
		}
	}
	if ran != 1 {
		t.Fatalf("the App's creation (%v) ran %d driftback app create commands, want one", step, ran)
	}
}

// appCreate runs `driftback ARGS` in dir and confirms its App on GitHub.
func (w *World) appCreate(t testing.TB, binary, dir string, args []string) {
	t.Helper()
	pr, pw := io.Pipe()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append(args, "--github-url", w.GitHub.URL(), "--api-url", w.GitHub.URL())...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, pw, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()
	page, done, err := ReadSetupPage(pr, &stdout)
	if err != nil {
		cancel()
		t.Fatalf("driftback %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	if status, body := Browse(t, page); status != http.StatusOK {
		cancel()
		<-done
		t.Fatalf("driftback %s: GitHub's answer to the manifest form: %d %s", strings.Join(args, " "), status, body)
	}
	err = <-exited
	<-done
	if err != nil {
		t.Fatalf("driftback %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	for _, f := range []string{"github-app-id", "github-app-secret.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("step 1 wrote no %s: %v\n%s", f, err, stdout.String())
		}
	}
}

// appIDLine is the appID line of step 2's config.
var appIDLine = regexp.MustCompile(`(?m)^(\s+appID:\s*)(\d+)(.*)$`)

// ConfigWithAppID is step 2's config as the user saves it: the page's,
// byte for byte, with appID the number step 1 wrote into dir's
// github-app-id, copied as the line's comment says.
func ConfigWithAppID(config []byte, dir string) ([]byte, error) {
	id, err := os.ReadFile(filepath.Join(dir, "github-app-id"))
	if err != nil {
		return nil, err
	}
	n := strings.TrimSpace(string(id))
	if !regexp.MustCompile(`^[1-9][0-9]*$`).MatchString(n) {
		return nil, fmt.Errorf("github-app-id holds %q, not an App id", id)
	}
	lines := appIDLine.FindAllSubmatch(config, -1)
	if len(lines) != 1 {
		return nil, fmt.Errorf("step 2's config has %d appID lines, want one", len(lines))
	}
	if !strings.Contains(string(lines[0][3]), "github-app-id") {
		return nil, fmt.Errorf("step 2's appID line does not say where the number comes from (github-app-id): %q", lines[0][0])
	}
	return appIDLine.ReplaceAll(config, []byte("${1}"+n+"${3}")), nil
}
