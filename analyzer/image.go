package analyzer

import "strings"

// imageRef is a container image reference split the way kustomize's images
// transformer sees it: name[:tag][@digest].
type imageRef struct {
	Name, Tag, Digest string
}

// parseImage splits an image reference. A ':' before the last '/' belongs to
// a registry port (localhost:5000/app), never to a tag.
func parseImage(s string) imageRef {
	var r imageRef
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

func (r imageRef) String() string {
	s := r.Name
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// component returns one part of the reference by its entry field name.
func (r imageRef) component(field string) string {
	switch field {
	case fieldNewName:
		return r.Name
	case fieldNewTag:
		return r.Tag
	case fieldDigest:
		return r.Digest
	}
	return ""
}

func (r *imageRef) setComponent(field, v string) {
	switch field {
	case fieldNewName:
		r.Name = v
	case fieldNewTag:
		r.Tag = v
	case fieldDigest:
		r.Digest = v
	}
}

// Entry fields, named as kustomization files spell them.
const (
	fieldNewName = "newName"
	fieldNewTag  = "newTag"
	fieldDigest  = "digest"
	fieldCount   = "count"
)

var imageFields = []string{fieldNewName, fieldNewTag, fieldDigest}
