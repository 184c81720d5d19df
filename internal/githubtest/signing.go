package githubtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Commit signatures, as GitHub reports them in a commit's verification
// object. GitHub signs with its own key (the web-flow account) what it
// commits itself: merges, and the commits a GitHub App creates through the
// Git Data API without giving an author, a committer or a signature
// ("signature verification for bots"); those it records as committed by
// "GitHub <noreply@github.com>". A commit pushed with Git carries whatever
// author and committer the pusher wrote, and a signature only if the pusher
// made one.
//
// The signatures here are stand-ins, not OpenPGP: an armored block naming
// the signing key (a user's id) and a digest of the signed payload. What
// GitHub derives from a signature is modelled: the key must belong to an
// account (unknown_key), the digest must match the commit (invalid), and
// the committer e-mail must be the signer's (bad_email); only then is the
// commit verified, with reason "valid".

const (
	webFlowLogin = "web-flow"
	webFlowName  = "GitHub"
	webFlowEmail = "noreply@github.com"

	sigBegin = "-----BEGIN PGP SIGNATURE-----"
	sigEnd   = "-----END PGP SIGNATURE-----"
	sigMark  = "githubtest-signature"
)

// webFlowLocked is the account GitHub commits and signs as.
func (s *Server) webFlowLocked() *user {
	u := s.userLocked(webFlowLogin, "User")
	u.mail = webFlowEmail
	return u
}

// signAsGitHubLocked makes c a commit GitHub made: committed by GitHub
// (web-flow) and signed with its key.
func (s *Server) signAsGitHubLocked(c *object.Commit) {
	wf := s.webFlowLocked()
	c.Committer = sig(webFlowName, wf.email(), c.Committer.When)
	s.signLocked(c, wf)
}

// signLocked signs c with signer's key.
func (s *Server) signLocked(c *object.Commit, signer *user) {
	c.PGPSignature = stubSignature(signer.id, signedPayload(c))
}

// signedPayload is the commit as Git writes it without its signature: what
// a signature covers, and what GitHub returns as the payload.
func signedPayload(c *object.Commit) string {
	o := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(o); err != nil {
		panic(err)
	}
	r, err := o.Reader()
	if err != nil {
		panic(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func stubDigest(keyID int64, payload string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s", keyID, payload)))
	return hex.EncodeToString(h[:])
}

func stubSignature(keyID int64, payload string) string {
	body := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("%s %d %s", sigMark, keyID, stubDigest(keyID, payload))))
	return sigBegin + "\n\n" + body + "\n" + sigEnd + "\n"
}

// verificationJSON is the commit's verification object ("verification").
func (s *Server) verificationJSON(c *object.Commit) map[string]any {
	if c.PGPSignature == "" {
		return map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil}
	}
	payload := signedPayload(c)
	reason := s.verifyLocked(c, payload)
	v := map[string]any{"verified": reason == "valid", "reason": reason, "signature": c.PGPSignature, "payload": payload, "verified_at": nil}
	if reason == "valid" {
		v["verified_at"] = ts(c.Committer.When)
	}
	return v
}

// verifyLocked gives GitHub's reason for a signed commit.
func (s *Server) verifyLocked(c *object.Commit, payload string) string {
	armored := strings.TrimSpace(c.PGPSignature)
	if !strings.HasPrefix(armored, sigBegin) || !strings.HasSuffix(armored, sigEnd) {
		return "malformed_signature"
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(armored, sigBegin), sigEnd)))
	if err != nil {
		return "malformed_signature"
	}
	var keyID int64
	var digest string
	if n, _ := fmt.Sscanf(string(raw), sigMark+" %d %s", &keyID, &digest); n != 2 {
		// A real OpenPGP signature: no account here holds its key.
		return "unknown_key"
	}
	var signer *user
	for _, u := range s.users {
		if u.id == keyID {
			signer = u
		}
	}
	switch {
	case signer == nil:
		return "unknown_key"
	case digest != stubDigest(keyID, payload):
		return "invalid"
	case !strings.EqualFold(c.Committer.Email, signer.email()):
		return "bad_email"
	}
	return "valid"
}
