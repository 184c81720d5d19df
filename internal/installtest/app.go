package installtest

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"testing"
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
