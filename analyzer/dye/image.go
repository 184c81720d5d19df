package dye

import (
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// ImageRef is a container image reference split the way kustomize's images
// transformer sees it: name[:tag][@digest].
type ImageRef struct {
	Name, Tag, Digest string
}

// ParseImage splits an image reference. A ':' before the last '/' belongs to
// a registry port (localhost:5000/app), never to a tag.
func ParseImage(s string) ImageRef {
	var r ImageRef
	if i := strings.IndexByte(s, '@'); i >= 0 {
		s, r.Digest = s[:i], s[i+1:]
	}
	slash := strings.LastIndexByte(s, '/')
	if i := strings.LastIndexByte(s, ':'); i > slash {
		s, r.Tag = s[:i], s[i+1:]
	}
	r.Name = s
	return r
}

// String is the reference as written.
func (r ImageRef) String() string {
	s := r.Name
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Component returns one part of the reference by its entry field name.
func (r ImageRef) Component(field string) string {
	switch field {
	case FieldNewName:
		return r.Name
	case FieldNewTag:
		return r.Tag
	case FieldDigest:
		return r.Digest
	}
	return ""
}

// SetComponent sets one part of the reference by its entry field name.
func (r *ImageRef) SetComponent(field, v string) {
	switch field {
	case FieldNewName:
		r.Name = v
	case FieldNewTag:
		r.Tag = v
	case FieldDigest:
		r.Digest = v
	}
}

// Entry fields, named as kustomization files spell them.
const (
	FieldNewName = "newName"
	FieldNewTag  = "newTag"
	FieldDigest  = "digest"
	FieldCount   = "count"
)

// ImageFields are the fields of an images: entry that name an image.
var ImageFields = []string{FieldNewName, FieldNewTag, FieldDigest}

// PatchOuter is where the inline patch of patches[i] sits in a
// kustomization.
func PatchOuter(i int) jsonvalue.Path {
	return jsonvalue.Path{jsonvalue.Key("patches"), jsonvalue.Index(i), jsonvalue.Key("patch")}
}

// ImageSlot is one image reference inside an object.
type ImageSlot struct {
	Path  jsonvalue.Path
	Image string
}

// ImageSlots finds the image fields kustomize's images transformer rewrites
// (measured): containers and initContainers at any depth, and
// volumes[].image.reference. ephemeralContainers are not rewritten, so they
// belong to the source and are not slots.
func ImageSlots(obj map[string]any) []ImageSlot {
	var out []ImageSlot
	var walk func(v any, p jsonvalue.Path)
	walk = func(v any, p jsonvalue.Path) {
		switch t := v.(type) {
		case map[string]any:
			for _, k := range jsonvalue.SortedKeys(t) {
				c := t[k]
				cp := p.Child(jsonvalue.Key(k))
				switch k {
				case "containers", "initContainers":
					if l, ok := c.([]any); ok {
						out = append(out, listSlots(l, cp, jsonvalue.Path{jsonvalue.Key("image")})...)
						continue
					}
				case "volumes":
					if l, ok := c.([]any); ok {
						out = append(out, listSlots(l, cp, jsonvalue.Path{jsonvalue.Key("image"), jsonvalue.Key("reference")})...)
						continue
					}
				case "ephemeralContainers":
					continue
				}
				walk(c, cp)
			}
		case []any:
			for i, e := range t {
				walk(e, p.Child(jsonvalue.Index(i)))
			}
		}
	}
	walk(obj, nil)
	return out
}

func listSlots(l []any, p jsonvalue.Path, field jsonvalue.Path) []ImageSlot {
	_, named := jsonvalue.ElementNames(l)
	var out []ImageSlot
	for i, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		ep := p.Child(jsonvalue.Index(i))
		if named {
			ep = p.Child(jsonvalue.Name(m["name"].(string)))
		}
		full := append(append(jsonvalue.Path{}, ep...), field...)
		if s, ok := jsonvalue.Get(m, field); ok {
			if img, ok := s.(string); ok {
				out = append(out, ImageSlot{Path: full, Image: img})
			}
		}
	}
	return out
}

// PatternMayMatch decides whether ^pat(:tag)?(@digest)?$ could match name
// followed by a tag or digest. A pattern of letters, digits, '_', '-', '/'
// and '.' (any one character) consumes exactly its own length, so after
// it the image must end or go on with ':' or '@'; any other pattern is a
// regular expression this does not read, and may match.
func PatternMayMatch(pat, name string) bool {
	for _, c := range pat {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '/' || c == '.') {
			return true
		}
	}
	for i := range len(name) {
		if name[i] >= 0x80 {
			return true // '.' matches a whole character, not a byte
		}
	}
	// The name, the same at every level, fills the image's first
	// len(name) characters and is followed by its end, ':' or '@'.
	for i := range min(len(pat), len(name)) {
		if pat[i] != '.' && pat[i] != name[i] {
			return false
		}
	}
	if len(pat) > len(name) {
		// The pattern runs on into the tag or digest, which may differ
		// between levels; only a '.' matches the ':' or '@' that starts it.
		return pat[len(name)] == '.'
	}
	return len(pat) == len(name) || name[len(pat)] == ':' || name[len(pat)] == '@'
}
