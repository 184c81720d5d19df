package deploycheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// Object is one rendered object: its parsed form plus a readable id.
type Object struct {
	Kind, Name, Namespace string
	Labels                map[string]string
	data                  map[string]any
	json                  []byte
}

// NewObject wraps one rendered object (as a JSON-shaped map).
func NewObject(data map[string]any) (*Object, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	o := &Object{data: data, json: b}
	var meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, err
	}
	if meta.Kind == "" || meta.Metadata.Name == "" {
		return nil, fmt.Errorf("an object without kind or name: %.200s", b)
	}
	o.Kind, o.Name, o.Namespace, o.Labels = meta.Kind, meta.Metadata.Name, meta.Metadata.Namespace, meta.Metadata.Labels
	return o, nil
}

// Parse reads multi-document YAML (what helm template or kustomize build
// prints), skipping empty documents.
func Parse(b []byte) ([]*Object, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var objs []*Object
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if doc == nil {
			continue
		}
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("a document is %T, not an object", doc)
		}
		o, err := NewObject(m)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
}

// Find returns the objects of one kind.
func Find(objs []*Object, kind string) []*Object { return find(objs, kind) }

// Decode converts the object into v (a partial typed view).
func (o *Object) Decode(v any) error { return o.decode(v) }

func (o *Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// decode converts the object into v (a partial typed view).
func (o *Object) decode(v any) error {
	b, err := json.Marshal(o.data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func find(objs []*Object, kind string) []*Object {
	var out []*Object
	for _, o := range objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func lookup(objs []*Object, kind, ns, name string) *Object {
	for _, o := range objs {
		if o.Kind == kind && o.Namespace == ns && o.Name == name {
			return o
		}
	}
	return nil
}
