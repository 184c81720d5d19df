package githubapi

import (
	"fmt"
	"net/url"
	"strings"
)

// GitHub serves its web pages and its API from related hosts: github.com
// and api.github.com; SUBDOMAIN.ghe.com and api.SUBDOMAIN.ghe.com
// (GitHub Enterprise Cloud with data residency); HOST and HOST/api/v3
// (GitHub Enterprise Server). APIURL and WebURL map one to the other.

// APIURL is the REST API root, with a trailing slash, behind a GitHub web
// address such as https://github.com or https://ghe.example.com.
func APIURL(web string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(web, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("%q is not a GitHub web address like https://github.com", web)
	}
	switch {
	case u.Host == "github.com" || strings.HasSuffix(u.Host, ".ghe.com"):
		u.Host = "api." + u.Host
		u.Path = "/"
	default:
		u.Path = "/api/v3/"
	}
	return u.String(), nil
}

// WebURL is the web address behind an API root, without a trailing slash.
func WebURL(api *url.URL) string {
	u := *api
	u.RawQuery, u.Fragment, u.RawPath = "", "", ""
	u.Path = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v3"), "/api")
	if rest, ok := strings.CutPrefix(u.Host, "api."); ok && (rest == "github.com" || strings.HasSuffix(rest, ".ghe.com")) {
		u.Host = rest
	}
	return strings.TrimSuffix(u.String(), "/")
}
