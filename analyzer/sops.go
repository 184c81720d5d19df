package analyzer

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
	"github.com/driftback/driftback/internal/yamledit"
)

// SOPS-encrypted sources (issue 53). Flux's kustomize-controller decrypts
// a SOPS file (spec.decryption) before it applies it: the cluster holds
// the plaintext, and no object carries the sops metadata. driftback holds
// no key, so it can neither compare Git's value with live nor write one:
//
//   - the render is compared as Flux applies it: without the top-level
//     sops block or the sops_ keys a dotenv file adds (withoutSOPS);
//   - a rendered value that is a ciphertext is taken as equal to live,
//     unless managedFields say a person wrote that field: then the field
//     is refused, its value never shown (sealFields, pairWith);
//   - an encrypted file is never written (writability.encrypted): every
//     write into one is refused encrypted-source, and a value whose home
//     is one is not carried elsewhere (an override, an authored entry).

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

// ciphertexts lists the paths of the SOPS ciphertexts in a rendered
// object: lists of named elements are stepped by name, as everything else
// pairs them, others by position. The values of a core Secret's data and
// of a ConfigMap's binaryData are read in their base64 form too.
func ciphertexts(obj map[string]any) []jsonvalue.Path {
	encodedIn := ""
	switch {
	case obj["apiVersion"] == "v1" && obj["kind"] == "Secret":
		encodedIn = "data"
	case obj["apiVersion"] == "v1" && obj["kind"] == "ConfigMap":
		encodedIn = "binaryData"
	}
	// Most objects hold none: a first look allocates nothing.
	if !anyCiphertext(obj, nil, encodedIn) {
		return nil
	}
	var out []jsonvalue.Path
	for k, v := range obj {
		findCiphertexts(v, jsonvalue.Path{jsonvalue.Key(k)}, k == encodedIn, &out)
	}
	return out
}

// anyCiphertext reports whether v holds a ciphertext; top is the key
// that holds v in the object (nil below the first level).
func anyCiphertext(v any, top *string, encodedIn string) bool {
	switch x := v.(type) {
	case string:
		return isCiphertext(x, false)
	case map[string]any:
		for k, e := range x {
			if top == nil {
				if anyCiphertext(e, &k, encodedIn) {
					return true
				}
				continue
			}
			if s, ok := e.(string); ok && *top == encodedIn && isCiphertext(s, true) {
				return true
			}
			if anyCiphertext(e, top, encodedIn) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if anyCiphertext(e, top, encodedIn) {
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

// withoutSOPS is the rendered object as the GitOps tool applies it once
// SOPS has decrypted its source: no top-level sops block (a YAML or JSON
// document's metadata, which live never holds), and no sops_ keys in a
// data or stringData map that holds a dotenv file's metadata (sops_mac,
// sops_version). The object itself when it holds neither; obj is never
// modified.
func withoutSOPS(obj map[string]any) map[string]any {
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

// sealing is what pairing finds of one object's ciphertexts: how many
// were taken as equal, and those a person wrote (refused, by whom).
type sealing struct {
	count    int
	byPerson []jsonvalue.Path
	by       []string
}

// sealFields makes live hold the render's value at every ciphertext of
// the render (paths, as found in the object before its Secret values
// were redacted): neither Git's plaintext nor live's ciphertext can be
// had, so the two compare as equal. A field live lacks is left alone: a
// removal shows without any value. It returns live, copied when anything
// was set, with what it found. Where own says a person wrote the field,
// the field is listed in byPerson.
func sealFields(live, ren map[string]any, secret bool, paths []jsonvalue.Path, own kube.Ownership) (map[string]any, sealing) {
	var s sealing
	copied := false
	for _, p := range paths {
		cp, folded := comparedPath(p, secret)
		rv, _ := jsonvalue.Get(ren, cp)
		lv, ok := jsonvalue.Get(live, cp)
		if !ok {
			continue
		}
		s.count++
		if own != nil {
			by := personsOf(own, cp)
			if len(by) == 0 && folded {
				by = personsOf(own, p) // who wrote stringData, as an apply records it
			}
			if len(by) > 0 {
				s.byPerson = append(s.byPerson, cp)
				s.by = appendNew(s.by, by...)
			}
		}
		if jsonvalue.Equal(lv, rv) {
			continue
		}
		if !copied {
			live, copied = jsonvalue.Copy(live).(map[string]any), true
		}
		jsonvalue.Set(live, cp, jsonvalue.Copy(rv))
	}
	return live, s
}

// sealUnseen takes out of unseen (the data keys of a Secret read without
// its body that a person's managers, by, own) those the render holds as
// ciphertexts: they are refused as encrypted fields a person wrote, not
// as unread Secret keys.
func sealUnseen(unseen []jsonvalue.Path, by []string, secret bool, enc []jsonvalue.Path, s sealing) ([]jsonvalue.Path, sealing) {
	if len(unseen) == 0 {
		return unseen, s
	}
	at := map[string]bool{}
	for _, p := range enc {
		cp, _ := comparedPath(p, secret)
		at[cp.String()] = true
	}
	var kept []jsonvalue.Path
	for _, u := range unseen {
		cu, _ := comparedPath(u, secret)
		if !at[cu.String()] {
			kept = append(kept, u)
			continue
		}
		if !slices.ContainsFunc(s.byPerson, func(q jsonvalue.Path) bool { return q.String() == cu.String() }) {
			s.byPerson = append(s.byPerson, cu)
		}
		s.by = appendNew(s.by, by...)
	}
	return kept, s
}

// comparedPath is where a rendered field is compared: a Secret's
// stringData key folds into data, as RedactSecret folds it.
func comparedPath(p jsonvalue.Path, secret bool) (jsonvalue.Path, bool) {
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

// refuseSealed refuses, per object, the ciphertext fields that
// managedFields say a person wrote in the cluster (pairWith found them;
// their intent already holds the render's value): Git's value is
// encrypted, so whether they differ cannot be told, and the file that
// holds it is never written. No value is named.
func (a *analysis) refuseSealed() {
	for _, p := range a.pairs {
		if len(p.sealed.byPerson) == 0 {
			continue
		}
		file := a.sealedFile(p.ren)
		a.refuse(Refusal{Code: CodeEncryptedSource, Object: RefOf(p.ren.Object), Field: joinPaths(p.sealed.byPerson), File: file,
			Message: fmt.Sprintf("Git holds these fields SOPS-encrypted (%s), and driftback never writes an encrypted file; managedFields say %s changed them in the cluster, and their values cannot be compared with Git's ciphertext",
				firstNonEmpty(file, "in an input of the build"), strings.Join(p.sealed.by, ", ")),
			Hint: encryptedHint(file)})
	}
}

// sealedFile names the file that holds a rendered object's ciphertexts:
// its source document's, or for a generated object the generator's first
// encrypted input (an env file, a file), else the kustomization that
// holds the generator.
func (a *analysis) sealedFile(r render.Object) string {
	if r.Generated == "" {
		return r.Origin
	}
	kind, name, file, ok := parseGenerated(r.Generated)
	if !ok {
		return ""
	}
	for _, n := range a.base.tree.Nodes {
		if n.File != file || n.K == nil {
			continue
		}
		var args []types.GeneratorArgs
		switch kind {
		case "configMapGenerator":
			for _, g := range n.K.ConfigMapGenerator {
				args = append(args, g.GeneratorArgs)
			}
		case "secretGenerator":
			for _, g := range n.K.SecretGenerator {
				args = append(args, g.GeneratorArgs)
			}
		}
		for _, g := range args {
			if name != "" && g.Name != name {
				continue
			}
			sources := append(append(slices.Clone(g.EnvSources), g.EnvSource), g.FileSources...)
			for _, s := range sources {
				if _, path, keyed := strings.Cut(s, "="); keyed {
					s = path
				}
				p, err := repofs.Join(n.Dir, s)
				if s == "" || err != nil {
					continue
				}
				if data, ok := a.snap.repo.File(p); ok && encryptedFile(data, func() (*yamledit.File, error) { return a.snap.forest.Parse(p) }) {
					return p
				}
			}
		}
	}
	return file
}

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
