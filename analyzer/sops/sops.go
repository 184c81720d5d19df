package sops

import (
	"bytes"
	"encoding/base64"
	"regexp"
	"slices"
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/yamledit"
)

// sopsMarker starts every value SOPS encrypts; AES256_GCM is the only
// cipher it writes.
const sopsMarker = "ENC[AES256_GCM,data:"

// sopsDotenvLine is the metadata line of a SOPS dotenv (or ini) file.
var sopsDotenvLine = regexp.MustCompile(`(?m)^[ \t]*sops_(mac|version)[ \t]*=`)

// isCiphertext reports whether a rendered scalar holds a SOPS ciphertext:
// the whole value (a field of an encrypted document, a line of an
// encrypted env file), a file's whole encrypted content (a generator's
// files: entry), or the base64 form of either, as a Secret's data and a
// ConfigMap's binaryData hold them (encoded, when under such a map).
func isCiphertext(s string, encoded bool) bool {
	if strings.Contains(s, sopsMarker) {
		return true
	}
	if !encoded {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	return err == nil && bytes.Contains(raw, []byte(sopsMarker))
}

// Ciphertexts lists the paths of the SOPS ciphertexts in a rendered
// object: lists of named elements are stepped by name, as everything else
// pairs them, others by position. The values of a core Secret's data and
// of a ConfigMap's binaryData are read in their base64 form too.
func Ciphertexts(obj map[string]any) []jsonvalue.Path {
	encodedIn := ""
	switch {
	case obj["apiVersion"] == "v1" && obj["kind"] == "Secret":
		encodedIn = "data"
	case obj["apiVersion"] == "v1" && obj["kind"] == "ConfigMap":
		encodedIn = "binaryData"
	}
	// Most objects hold none: a first look allocates nothing.
	found := false
	for k, v := range obj {
		if anyCiphertext(v, k == encodedIn) {
			found = true
			break
		}
	}
	if !found {
		return nil
	}
	var out []jsonvalue.Path
	for k, v := range obj {
		findCiphertexts(v, jsonvalue.Path{jsonvalue.Key(k)}, k == encodedIn, &out)
	}
	return out
}

// anyCiphertext reports whether v holds a ciphertext; encoded: v sits
// under the object's base64 map (a Secret's data, a ConfigMap's
// binaryData), whose strings are read decoded too. It allocates nothing:
// it runs on every object of every plan.
func anyCiphertext(v any, encoded bool) bool {
	switch x := v.(type) {
	case string:
		return isCiphertext(x, false)
	case map[string]any:
		for _, e := range x {
			if s, ok := e.(string); ok && encoded && isCiphertext(s, true) {
				return true
			}
			if anyCiphertext(e, encoded) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if anyCiphertext(e, encoded) {
				return true
			}
		}
	}
	return false
}

// findCiphertexts adds the paths under p (the value v) that hold a
// ciphertext; encoded: v is the map whose values are base64.
func findCiphertexts(v any, p jsonvalue.Path, encoded bool, out *[]jsonvalue.Path) {
	switch x := v.(type) {
	case string:
		if isCiphertext(x, false) {
			*out = append(*out, p)
		}
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && encoded {
				if isCiphertext(s, true) {
					*out = append(*out, p.Child(jsonvalue.Key(k)))
				}
				continue
			}
			findCiphertexts(e, p.Child(jsonvalue.Key(k)), false, out)
		}
	case []any:
		names, named := jsonvalue.ElementNames(x)
		for i, e := range x {
			step := jsonvalue.Index(i)
			if named {
				step = jsonvalue.Name(names[i])
			}
			findCiphertexts(e, p.Child(step), false, out)
		}
	}
}

// Without is the rendered object as the GitOps tool applies it once
// SOPS has decrypted its source: no top-level sops block (a YAML or JSON
// document's metadata, which live never holds), and no sops_ keys in a
// data or stringData map that holds a dotenv file's metadata (sops_mac,
// sops_version). The object itself when it holds neither; obj is never
// modified.
func Without(obj map[string]any) map[string]any {
	var out map[string]any
	own := func() {
		if out == nil {
			out = make(map[string]any, len(obj))
			for k, v := range obj {
				out[k] = v
			}
		}
	}
	if _, ok := obj["sops"].(map[string]any); ok {
		own()
		delete(out, "sops")
	}
	for _, field := range []string{"data", "stringData"} {
		m, ok := obj[field].(map[string]any)
		if !ok {
			continue
		}
		_, mac := m["sops_mac"]
		_, version := m["sops_version"]
		if !mac && !version {
			continue
		}
		kept := make(map[string]any, len(m))
		for k, v := range m {
			if !strings.HasPrefix(k, "sops_") {
				kept[k] = v
			}
		}
		own()
		out[field] = kept
	}
	if out == nil {
		return obj
	}
	return out
}

// Sealing is what pairing finds of one object's ciphertexts: how many
// were taken as equal, and those a person wrote (refused, by whom).
type Sealing struct {
	Count    int
	ByPerson []jsonvalue.Path
	By       []string
	// Other are the fields where the cluster holds a SOPS ciphertext
	// other than Git's: nothing decrypted them, so they differ from Git
	// for certain (another version of the file was applied as it is).
	Other []jsonvalue.Path
}

// Seal makes live hold the render's value at every ciphertext of
// the render (paths, as found in the object before its Secret values
// were redacted): neither Git's plaintext nor live's ciphertext can be
// had, so the two compare as equal. A field live lacks is left alone: a
// removal shows without any value. It returns live, copied when anything
// was set, with what it found. Where own says a person wrote the field,
// the field is listed in byPerson.
func Seal(live, ren map[string]any, secret bool, paths []jsonvalue.Path, own kube.Ownership) (map[string]any, Sealing) {
	var s Sealing
	copied := false
	for _, p := range paths {
		cp, folded := ComparedPath(p, secret)
		rv, _ := jsonvalue.Get(ren, cp)
		lv, ok := jsonvalue.Get(live, cp)
		if !ok {
			continue
		}
		s.Count++
		person := false
		if own != nil {
			by := personsOf(own, cp)
			if len(by) == 0 && folded {
				by = personsOf(own, p) // who wrote stringData, as an apply records it
			}
			if person = len(by) > 0; person {
				s.ByPerson = append(s.ByPerson, cp)
				s.By = appendNew(s.By, by...)
			}
		}
		if jsonvalue.Equal(lv, rv) {
			continue
		}
		if ls, ok := lv.(string); ok && !person && isCiphertext(ls, secret && cp[0].Key == "data") {
			s.Other = append(s.Other, cp)
		}
		if !copied {
			live, copied = jsonvalue.Copy(live).(map[string]any), true
		}
		jsonvalue.Set(live, cp, jsonvalue.Copy(rv))
	}
	return live, s
}

// SealUnseen takes out of unseen (the data keys of a Secret read without
// its body that a person's managers, by, own) those the render holds as
// ciphertexts: they are refused as encrypted fields a person wrote, not
// as unread Secret keys.
func SealUnseen(unseen []jsonvalue.Path, by []string, secret bool, enc []jsonvalue.Path, s Sealing) ([]jsonvalue.Path, Sealing) {
	if len(unseen) == 0 {
		return unseen, s
	}
	at := map[string]bool{}
	for _, p := range enc {
		cp, _ := ComparedPath(p, secret)
		at[cp.String()] = true
	}
	var kept []jsonvalue.Path
	for _, u := range unseen {
		cu, _ := ComparedPath(u, secret)
		if !at[cu.String()] {
			kept = append(kept, u)
			continue
		}
		if !slices.ContainsFunc(s.ByPerson, func(q jsonvalue.Path) bool { return q.String() == cu.String() }) {
			s.ByPerson = append(s.ByPerson, cu)
		}
		s.By = appendNew(s.By, by...)
	}
	return kept, s
}

// ComparedPath is where a rendered field is compared: a Secret's
// stringData key folds into data, as RedactSecret folds it.
func ComparedPath(p jsonvalue.Path, secret bool) (jsonvalue.Path, bool) {
	if secret && len(p) > 0 && p[0].Kind == jsonvalue.KeyStep && p[0].Key == "stringData" {
		return append(jsonvalue.Path{jsonvalue.Key("data")}, p[1:]...), true
	}
	return p, false
}

func appendNew(to []string, names ...string) []string {
	for _, n := range names {
		if !slices.Contains(to, n) {
			to = append(to, n)
		}
	}
	return to
}

// EncryptedFile reports whether a file of the repository is SOPS-encrypted:
// it holds a ciphertext, a dotenv (or ini) file's sops_mac or sops_version
// line, or a YAML or JSON document with a top-level sops mapping (Flux's
// own test for those). parse reads the file's documents; it is asked only
// when the text names sops somewhere.
func EncryptedFile(data []byte, parse func() (*yamledit.File, error)) bool {
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

// personsOf names the managers other than the GitOps tool's writer that
// own the field at p (kube.Ownership.Wrote), without their operations.
func personsOf(own kube.Ownership, p jsonvalue.Path) []string {
	w := own.Wrote(p, nil)
	if w.By != kube.WriterPerson {
		return nil
	}
	var out []string
	for _, m := range w.Managers {
		name, _, _ := strings.Cut(m, " (")
		out = appendNew(out, name)
	}
	return out
}
