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
