package githubapi

import (
	"net/url"
	"strings"
	"testing"
)

func TestAPIURLIsTheInverseOfTheWebHost(t *testing.T) {
	for web, api := range map[string]string{
		"https://github.com":      "https://api.github.com/",
		"https://octo.ghe.com/":   "https://api.octo.ghe.com/",
		"https://ghe.example.com": "https://ghe.example.com/api/v3/",
		"http://127.0.0.1:8080":   "http://127.0.0.1:8080/api/v3/",
	} {
		got, err := APIURL(web)
		if err != nil || got != api {
			t.Errorf("APIURL(%s) = %s, %v; want %s", web, got, err, api)
			continue
		}
		u, _ := url.Parse(got)
		if back := WebURL(u); back != strings.TrimSuffix(web, "/") {
			t.Errorf("WebURL(%s) = %s, want %s", got, back, web)
		}
	}
	for _, bad := range []string{"github.com", "ftp://github.com", "https://github.com/acme", ""} {
		if _, err := APIURL(bad); err == nil {
			t.Errorf("APIURL(%q) took it", bad)
		}
	}
}
