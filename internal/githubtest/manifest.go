package githubtest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"
)

// The GitHub App manifest flow: a form on github.com takes the manifest as
// a JSON string, and once the person confirms, GitHub sends a one-time code
// to the manifest's redirect_url; POST /app-manifests/{code}/conversions
// turns the code into the App's id and private key. The server skips the
// confirmation page: the form answers with the redirect at once.

// manifestFormOp is the pseudo operation id of the github.com form, which
// the REST description does not cover.
const manifestFormOp = "githubtest/app-manifest-form"

// manifestUser owns Apps registered through the personal form (there is
// no signed-in person on the test server).
const manifestUser = "githubtest-user"

// appManifest is what GitHub documents a manifest may hold; anything else
// is refused, so a misspelled key is caught here rather than ignored.
type appManifest struct {
	Name               string            `json:"name"`
	URL                string            `json:"url"`
	HookAttributes     *hookAttributes   `json:"hook_attributes"`
	RedirectURL        string            `json:"redirect_url"`
	CallbackURLs       []string          `json:"callback_urls"`
	SetupURL           string            `json:"setup_url"`
	Description        string            `json:"description"`
	Public             bool              `json:"public"`
	DefaultEvents      []string          `json:"default_events"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	RequestOAuth       bool              `json:"request_oauth_on_install"`
	SetupOnUpdate      bool              `json:"setup_on_update"`
}

type hookAttributes struct {
	URL    string `json:"url"`
	Active *bool  `json:"active"`
}

// pendingManifest is a submitted manifest waiting for its code's exchange.
type pendingManifest struct {
	m       appManifest
	owner   string
	expires time.Time
}

// AppInfo is the test-side view of a registered App.
type AppInfo struct {
	ID          int64
	Slug, Owner string
	Permissions map[string]string
	Events      []string
	PublicKey   *rsa.PublicKey
	// HookURL and HookActive are the App's webhook; WebhookSecret is the
	// secret GitHub generated for it ("" while the hook is inactive).
	HookURL       string
	HookActive    bool
	WebhookSecret string
}

// Apps lists the registered Apps by id.
func (s *Server) Apps() []AppInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []AppInfo
	for _, a := range s.apps {
		perms := map[string]string{}
		for k, v := range a.perms {
			perms[k] = v
		}
		out = append(out, AppInfo{ID: a.id, Slug: a.slug, Owner: a.owner, Permissions: perms,
			Events: append([]string(nil), a.events...), PublicKey: a.pub,
			HookURL: a.hookURL, HookActive: a.hookActive, WebhookSecret: a.webhookSecret})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (c *call) manifestForm() *reply {
	owner := manifestUser
	if org, ok := c.params["org"]; ok {
		owner = org
		c.s.userLocked(org, "Organization")
	}
	form, err := url.ParseQuery(string(c.body))
	if err != nil || !strings.HasPrefix(c.r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return formError(http.StatusBadRequest, "the manifest must be posted as a form")
	}
	raw := form.Get("manifest")
	if raw == "" {
		return formError(http.StatusBadRequest, "the form has no manifest field")
	}
	var m appManifest
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return formError(http.StatusUnprocessableEntity, "invalid manifest: "+err.Error())
	}
	if msg := m.problem(); msg != "" {
		return formError(http.StatusUnprocessableEntity, "invalid manifest: "+msg)
	}
	if c.s.appBySlug(slugOf(m.Name)) != nil {
		return formError(http.StatusUnprocessableEntity, "Name is already in use")
	}
	code := randomToken("")
	if c.s.manifests == nil {
		c.s.manifests = map[string]pendingManifest{}
	}
	c.s.manifests[code] = pendingManifest{m: m, owner: owner, expires: c.s.opts.Clock().Add(time.Hour)}
	back, _ := url.Parse(m.RedirectURL)
	q := back.Query()
	q.Set("code", code)
	if st := c.r.URL.Query().Get("state"); st != "" {
		q.Set("state", st)
	}
	back.RawQuery = q.Encode()
	rep := &reply{status: http.StatusFound, header: http.Header{}}
	rep.header.Set("Location", back.String())
	return rep
}

// problem names what GitHub would refuse in a manifest, "" if nothing.
func (m *appManifest) problem() string {
	switch {
	case m.Name == "":
		return "name is required"
	case !absoluteHTTP(m.URL):
		return "url must be an http(s) URL"
	case !absoluteHTTP(m.RedirectURL):
		return "redirect_url must be an http(s) URL (the code is sent there)"
	}
	if h := m.HookAttributes; h == nil || h.Active == nil || *h.Active {
		if h == nil || !absoluteHTTP(h.URL) {
			return "hook_attributes.url is required while the webhook is active"
		}
	}
	for p, level := range m.DefaultPermissions {
		if level != "read" && level != "write" {
			return fmt.Sprintf("default_permissions.%s: %q is neither read nor write", p, level)
		}
	}
	for _, e := range m.DefaultEvents {
		need, known := eventPermission[e]
		if !known {
			return fmt.Sprintf("default_events: %q is not an event a GitHub App can subscribe to here", e)
		}
		if _, ok := m.DefaultPermissions[need]; !ok && need != "metadata" {
			return fmt.Sprintf("default_events: %q needs the %s permission", e, need)
		}
	}
	return ""
}

// eventPermission is the permission an App needs to subscribe to an event
// (the events the test server knows).
var eventPermission = map[string]string{
	"check_run": "checks", "check_suite": "checks", "pull_request": "pull_requests",
	"pull_request_review": "pull_requests", "push": "contents", "create": "contents", "delete": "contents",
	"repository": "metadata", "member": "members", "membership": "members",
}

func absoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

var slugJunk = regexp.MustCompile(`[^a-z0-9]+`)

func slugOf(name string) string {
	return strings.Trim(slugJunk.ReplaceAllString(strings.ToLower(name), "-"), "-")
}

func (s *Server) appBySlug(slug string) *app {
	for _, a := range s.apps {
		if a.slug == slug {
			return a
		}
	}
	return nil
}

// formError is the web form's answer: a page, not JSON.
func formError(status int, msg string) *reply {
	rep := &reply{status: status, header: http.Header{}, body: []byte(msg + "\n")}
	rep.header.Set("Content-Type", "text/plain; charset=utf-8")
	return rep
}

func (c *call) convertManifest() *reply {
	code := c.params["code"]
	pm, ok := c.s.manifests[code]
	if !ok || !c.s.opts.Clock().Before(pm.expires) {
		return errReply(http.StatusNotFound, "Not Found")
	}
	delete(c.s.manifests, code) // one use only
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return errReply(http.StatusInternalServerError, err.Error())
	}
	perms := map[string]string{"metadata": "read"}
	for k, v := range pm.m.DefaultPermissions {
		perms[k] = v
	}
	a := &app{id: c.s.id(), slug: slugOf(pm.m.Name), owner: pm.owner, pub: &key.PublicKey, created: c.s.now(),
		perms: perms, events: append([]string{}, pm.m.DefaultEvents...)}
	if h := pm.m.HookAttributes; h != nil {
		a.hookURL = h.URL
	}
	if h := pm.m.HookAttributes; h == nil || h.Active == nil || *h.Active {
		// GitHub generates the secret deliveries are signed with.
		a.hookActive, a.webhookSecret = true, randomToken("")
	}
	c.s.apps[a.id] = a
	c.s.userLocked(a.slug+"[bot]", "Bot")
	out := c.s.appJSON(a)
	var pemBuf bytes.Buffer
	_ = pem.Encode(&pemBuf, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	out["client_id"] = "Iv1." + randomToken("")[:16]
	out["client_secret"] = randomToken("")
	out["webhook_secret"] = nil
	if a.webhookSecret != "" {
		out["webhook_secret"] = a.webhookSecret
	}
	out["pem"] = pemBuf.String()
	return jsonReply(http.StatusCreated, out)
}
