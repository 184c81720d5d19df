package yamledit

import "testing"

// TestIdentityAgreesWithValue: wherever Identity answers plainly, it reads
// what Value decodes; where it cannot be sure it says so.
func TestIdentityAgreesWithValue(t *testing.T) {
	cases := []struct {
		doc       string
		plain     bool
		av, k, nm string
		empty     bool
		items     bool
	}{
		{doc: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n", plain: true, av: "apps/v1", k: "Deployment", nm: "web"},
		{doc: "kind: ConfigMap\napiVersion: v1\nmetadata: {name: 'c', labels: {a: b}}\ndata: {x: '1'}\n", plain: true, av: "v1", k: "ConfigMap", nm: "c"},
		{doc: "\"apiVersion\": v1\n\"kind\": \"Service\"\nmetadata:\n  \"name\": svc\n", plain: true, av: "v1", k: "Service", nm: "svc"},
		{doc: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 123\n", plain: true, av: "v1", k: "ConfigMap"},
		{doc: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: null\n", plain: true, av: "v1", k: "ConfigMap"},
		{doc: "apiVersion: v1\nkind: ConfigMap\n", plain: true, av: "v1", k: "ConfigMap"},
		{doc: "apiVersion: v1\nkind: ConfigMap\nmetadata: []\n", plain: true, av: "v1", k: "ConfigMap"},
		{doc: "apiVersion: v1\nkind: List\nitems: []\n", plain: true, av: "v1", k: "List", items: true},
		{doc: "", plain: true, empty: true},
		{doc: "---\nnull\n", plain: true, empty: true},
		{doc: "apiVersion: v1\nkind: !!str ConfigMap\nmetadata:\n  name: c\n", plain: true, av: "v1", k: "ConfigMap", nm: "c"},
		// Where only the decoder can say:
		{doc: "apiVersion: v1\nkind: !custom ConfigMap\nmetadata:\n  name: c\n"},
		{doc: "base: &m {name: c}\napiVersion: v1\nkind: ConfigMap\nmetadata: *m\n"},
		{doc: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  <<: {name: c}\n"},
		{doc: "apiVersion: v1\nkind: ConfigMap\nkind: Secret\nmetadata:\n  name: c\n"},
		{doc: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  name: d\n"},
		{doc: "apiVersion: v1\nkind: ConfigMap\n? [a, b]\n: c\n"},
		{doc: "- a\n- b\n"},
	}
	for _, c := range cases {
		f, err := Parse("f.yaml", []byte(c.doc))
		if err != nil {
			t.Fatalf("%q: %v", c.doc, err)
		}
		if f.Len() == 0 {
			continue // nothing to name
		}
		id, plain := f.Identity(0)
		if plain != c.plain {
			t.Errorf("%q: plain = %v, want %v", c.doc, plain, c.plain)
			continue
		}
		if !plain {
			continue
		}
		if id.APIVersion != c.av || id.Kind != c.k || id.Name != c.nm || id.Empty != c.empty || id.HasItems != c.items {
			t.Errorf("%q: Identity = %+v", c.doc, id)
		}
		v, err := f.Value(0)
		if err != nil {
			t.Errorf("%q: Identity plain but Value fails: %v", c.doc, err)
			continue
		}
		if (v == nil) != id.Empty {
			t.Errorf("%q: Value %v, Identity empty %v", c.doc, v, id.Empty)
			continue
		}
		if v == nil {
			continue
		}
		av, _ := v["apiVersion"].(string)
		k, _ := v["kind"].(string)
		meta, _ := v["metadata"].(map[string]any)
		nm, _ := meta["name"].(string)
		_, items := v["items"]
		if av != id.APIVersion || k != id.Kind || nm != id.Name || items != id.HasItems {
			t.Errorf("%q: Value reads %s %s %s items=%v, Identity %+v", c.doc, av, k, nm, items, id)
		}
	}
	// Every document of the editor's own corpus reads the same both ways.
	for name, doc := range corpus {
		f, err := Parse(name, []byte(doc))
		if err != nil {
			continue
		}
		for i := range f.Len() {
			id, plain := f.Identity(i)
			v, err := f.Value(i)
			if !plain || err != nil || v == nil {
				continue
			}
			k, _ := v["kind"].(string)
			meta, _ := v["metadata"].(map[string]any)
			nm, _ := meta["name"].(string)
			if k != id.Kind || nm != id.Name {
				t.Errorf("%s doc %d: Value %s/%s, Identity %+v", name, i, k, nm, id)
			}
		}
	}
}
