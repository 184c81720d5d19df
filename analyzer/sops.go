package analyzer

import (
	"bytes"
	"regexp"

	"github.com/driftback/driftback/internal/yamledit"
)

// SOPS-encrypted sources (issue 53). Flux's kustomize-controller decrypts
// a SOPS file (spec.decryption) before it applies it: the cluster holds
// the plaintext, and no object carries the sops metadata. driftback holds
// no key, so it never writes one: an encrypted file is never written
// (writability.encrypted). Every write into one is refused
// encrypted-source, and a value whose home is one is not carried
// elsewhere (an override, an authored entry).

// sopsMarker starts every value SOPS encrypts; AES256_GCM is the only
// cipher it writes.
const sopsMarker = "ENC[AES256_GCM,data:"

// sopsDotenvLine is the metadata line of a SOPS dotenv (or ini) file.
var sopsDotenvLine = regexp.MustCompile(`(?m)^[ \t]*sops_(mac|version)[ \t]*=`)

// encryptedRefusal is why an encrypted file is never written.
func encryptedRefusal(file string) *Refusal {
	return &Refusal{Code: CodeEncryptedSource, File: file,
		Message: file + " is SOPS-encrypted and driftback never writes it: only sops can change it without breaking its MAC, and the cluster holds its values decrypted",
		Hint:    encryptedHint(file)}
}

func encryptedHint(file string) string {
	if file == "" {
		file = "FILE"
	}
	return "edit the file with `sops` (sops " + file + "), or put the cluster back to Git's value"
}

// encryptedFile reports whether a file of the repository is SOPS-encrypted:
// it holds a ciphertext, a dotenv (or ini) file's sops_mac or sops_version
// line, or a YAML or JSON document with a top-level sops mapping (Flux's
// own test for those). parse reads the file's documents; it is asked only
// when the text names sops somewhere.
func encryptedFile(data []byte, parse func() (*yamledit.File, error)) bool {
	if bytes.Contains(data, []byte(sopsMarker)) || sopsDotenvLine.Match(data) {
		return true
	}
	if !bytes.Contains(data, []byte("sops")) {
		return false
	}
	f, err := parse()
	if err != nil || f == nil {
		return false
	}
	for i := 0; i < f.Len(); i++ {
		v, err := f.Value(i)
		if err != nil {
			continue
		}
		if _, ok := v["sops"].(map[string]any); ok {
			return true
		}
	}
	return false
}

// encrypted reports whether the plan must never write file because it is
// SOPS-encrypted (encryptedFile); a file the repository lacks (one the
// plan would create) is not. The answer is kept per file.
func (w *writability) encrypted(file string) bool {
	if file == "" {
		return false
	}
	if enc, ok := w.sealed[file]; ok {
		return enc
	}
	data, ok := w.repo.File(file)
	enc := ok && encryptedFile(data, func() (*yamledit.File, error) { return w.forest.Parse(file) })
	if w.sealed == nil {
		w.sealed = map[string]bool{}
	}
	w.sealed[file] = enc
	return enc
}
