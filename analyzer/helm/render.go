package helm

import (
	"context"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"

	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/yamledit"
)

// Options are what a render takes besides the chart and the values: the
// release, and the cluster's capabilities as the caller knows them (the
// tool reads them from the cluster; here nothing is asked of one).
type Options struct {
	ReleaseName string
	Namespace   string
	// Revision is .Release.Revision; 0 means 1, a first install.
	Revision int
	// IsUpgrade renders with .Release.IsUpgrade true and IsInstall false,
	// as the tool does for every release after the first.
	IsUpgrade bool
	// KubeVersion is .Capabilities.KubeVersion ("v1.34.1"); empty keeps
	// Helm's default, which is not the cluster's (see the package doc).
	KubeVersion string
	// APIVersions are added to Helm's default .Capabilities.APIVersions.
	APIVersions []string
	// IncludeCRDs writes the crds/ files at the head of Manifest, as
	// `helm template --include-crds` (Argo CD) does. Rendering.CRDs holds
	// them either way.
	IncludeCRDs bool
}

// Object is one rendered document.
type Object struct {
	// Source is the template that wrote it, as Helm names it
	// ("app/templates/deployment.yaml", "app/charts/db/templates/sts.yaml")
	// or, for a CRD, its file ("app/crds/widget.yaml").
	Source string
	// Object is the document as driftback reads YAML (internal/yamledit).
	Object map[string]any
	// Hook holds the Helm hook events of a hook ("pre-install", "test").
	Hook []string
}

// Rendering is one render of a release.
type Rendering struct {
	// Objects are the release's own objects, in Helm's install order.
	Objects []Object
	// Hooks are rendered hook documents (helm.sh/hook). Helm and Flux run
	// them around an install or upgrade and leave them out of the release
	// manifest; Argo CD applies them as sync hooks (see the package doc).
	Hooks []Object
	// CRDs are the crds/ files of the chart and its enabled subcharts, not
	// templated.
	CRDs []Object
	// Manifest is the release manifest as Helm records it: each object
	// after "---\n# Source: <template>\n", with the CRDs first when
	// Options.IncludeCRDs is set.
	Manifest string
}

// Render renders chart c with the user-supplied values vals (the chart's
// own defaults are coalesced under them by Helm), as `helm template` and
// the tools' install and upgrade do, without a cluster: lookup finds
// nothing, DNS lookups are off, and values.schema.json is not checked (a
// schema may point at a URL). NOTES.txt is left out.
func Render(c *Chart, vals map[string]any, o Options) (*Rendering, error) {
	ch, top, err := c.renderValues(vals, o)
	if err != nil {
		return nil, err
	}
	var e engine.Engine
	files, err := e.RenderWithContext(context.Background(), ch, top)
	if err != nil {
		return nil, err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	r := &Rendering{}
	var b strings.Builder
	for _, crd := range ch.CRDObjects() {
		objs, err := decodeDocs(crd.Filename, string(crd.File.Data))
		if err != nil {
			return nil, err
		}
		r.CRDs = append(r.CRDs, objs...)
		if o.IncludeCRDs {
			fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", crd.Filename, crd.File.Data)
		}
	}
	for _, m := range manifests {
		objs, err := decodeDocs(m.Name, m.Content)
		if err != nil {
			return nil, err
		}
		r.Objects = append(r.Objects, objs...)
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	r.Manifest = b.String()
	for _, h := range hooks {
		objs, err := decodeDocs(h.Path, h.Manifest)
		if err != nil {
			return nil, err
		}
		for i := range objs {
			for _, ev := range h.Events {
				objs[i].Hook = append(objs[i].Hook, string(ev))
			}
		}
		r.Hooks = append(r.Hooks, objs...)
	}
	return r, nil
}

// renderValues loads a fresh chart, drops its disabled subcharts and
// imports their values as Helm's install does, and builds the render's
// top-level object (.Values, .Release, .Chart, .Capabilities).
func (c *Chart) renderValues(vals map[string]any, o Options) (*chart.Chart, common.Values, error) {
	ch, err := c.load()
	if err != nil {
		return nil, nil, err
	}
	if vals == nil {
		vals = map[string]any{}
	}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, nil, fmt.Errorf("chart dependencies: %w", err)
	}
	caps := common.DefaultCapabilities.Copy()
	if o.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(o.KubeVersion)
		if err != nil {
			return nil, nil, err
		}
		caps.KubeVersion = *kv
	}
	caps.APIVersions = append(caps.APIVersions, o.APIVersions...)
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, nil, fmt.Errorf("chart requires kubeVersion %s, which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.Version)
	}
	rev := o.Revision
	if rev == 0 {
		rev = 1
	}
	top, err := util.ToRenderValuesWithSchemaValidation(ch, vals, common.ReleaseOptions{
		Name:      o.ReleaseName,
		Namespace: o.Namespace,
		Revision:  rev,
		IsInstall: !o.IsUpgrade,
		IsUpgrade: o.IsUpgrade,
	}, caps, true)
	if err != nil {
		return nil, nil, err
	}
	return ch, top, nil
}

// decodeDocs reads the documents of one rendered file; empty documents
// are dropped, as Helm drops them.
func decodeDocs(source, content string) ([]Object, error) {
	f, err := yamledit.Parse(source, []byte(content))
	if err != nil {
		return nil, err
	}
	var out []Object
	for i := 0; i < f.Len(); i++ {
		v, err := f.Value(i)
		if err != nil {
			return nil, err
		}
		if len(v) == 0 {
			continue
		}
		out = append(out, Object{Source: source, Object: v})
	}
	return out, nil
}

// ObjectID names a rendered or live object as a person does.
type ObjectID struct {
	APIVersion, Kind, Namespace, Name string
}

func (id ObjectID) String() string {
	s := id.Kind + " " + id.Name
	if id.Namespace != "" {
		s = id.Kind + " " + id.Namespace + "/" + id.Name
	}
	return s + " (" + id.APIVersion + ")"
}

// idOf is the ID of a rendered object; a namespaced object the chart
// leaves without a namespace lands in the release's namespace, and so it
// is named here. A cluster-scoped object is matched by name whatever the
// caller puts in Namespace.
func idOf(obj map[string]any, releaseNS string) ObjectID {
	id := ObjectID{}
	id.APIVersion, _ = obj["apiVersion"].(string)
	id.Kind, _ = obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	id.Name, _ = meta["name"].(string)
	id.Namespace, _ = meta["namespace"].(string)
	if id.Namespace == "" {
		id.Namespace = releaseNS
	}
	return id
}

// sameObject reports whether rendered id a is the object b names: the
// same group (the version may differ), kind and name, and the same
// namespace unless b leaves it empty.
func sameObject(a, b ObjectID) bool {
	return render.GroupOf(a.APIVersion) == render.GroupOf(b.APIVersion) && a.Kind == b.Kind && a.Name == b.Name &&
		(b.Namespace == "" || a.Namespace == b.Namespace)
}
