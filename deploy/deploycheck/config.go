package deploycheck

import (
	"fmt"
	"net"
	"slices"
	"strings"
)

const configFlag = "--config"

// mountedFile says which ConfigMap or Secret key a file path in the
// container comes from: kind is "ConfigMap" or "Secret".
func mountedFile(d *deployment, c container, file string) (kind, name, key string, ok bool) {
	best := -1
	for i, m := range c.VolumeMounts {
		mp := strings.TrimSuffix(m.MountPath, "/")
		if (file == mp || strings.HasPrefix(file, mp+"/")) && (best < 0 || len(mp) > len(c.VolumeMounts[best].MountPath)) {
			best = i
		}
	}
	if best < 0 {
		return "", "", "", false
	}
	m := c.VolumeMounts[best]
	rel := strings.TrimPrefix(strings.TrimPrefix(file, strings.TrimSuffix(m.MountPath, "/")), "/")
	if m.SubPath != "" {
		rel = strings.Trim(m.SubPath+"/"+rel, "/")
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == m.Name {
			return fromSource(v.volumeSource, rel)
		}
	}
	return "", "", "", false
}

func fromSource(src volumeSource, rel string) (kind, name, key string, ok bool) {
	pick := func(items []keyToPath) (string, bool) {
		if len(items) == 0 {
			return rel, rel != "" && !strings.Contains(rel, "/")
		}
		for _, it := range items {
			if strings.Trim(it.Path, "/") == rel {
				return it.Key, true
			}
		}
		return "", false
	}
	switch {
	case src.ConfigMap != nil:
		if k, ok := pick(src.ConfigMap.Items); ok {
			return "ConfigMap", src.ConfigMap.Name, k, true
		}
	case src.Secret != nil:
		if k, ok := pick(src.Secret.Items); ok {
			name := src.Secret.SecretName // a secret volume
			if name == "" {
				name = src.Secret.Name // a projected source
			}
			return "Secret", name, k, true
		}
	case src.Projected != nil:
		for _, s := range src.Projected.Sources {
			if kind, name, key, ok := fromSource(s, rel); ok {
				return kind, name, key, true
			}
		}
	}
	return "", "", "", false
}

// checkConfig: the file the container is told to read (--config) is a
// ConfigMap key of the installation, it passes ParseConfig, its key file is the
// mounted Secret users are told to create, and it listens where the
// probes and the Service look.
func (e Expect) checkConfig(objs []*Object) []string {
	o, d, ps := e.theDeployment(objs)
	if ps != nil {
		return ps
	}
	c := d.Spec.Template.Spec.Containers[0]
	path := ""
	for i, a := range c.Args {
		if a == configFlag && i+1 < len(c.Args) {
			path = c.Args[i+1]
		} else if v, ok := strings.CutPrefix(a, configFlag+"="); ok {
			path = v
		}
	}
	if path == "" {
		return []string{fmt.Sprintf("%s: container %q: args %q have no %s FILE", o, c.Name, c.Args, configFlag)}
	}
	kind, name, key, ok := mountedFile(d, c, path)
	if !ok || kind != "ConfigMap" {
		return []string{fmt.Sprintf("%s: container %q: %s %s is not a mounted ConfigMap key", o, c.Name, configFlag, path)}
	}
	cm := lookup(objs, "ConfigMap", o.Namespace, name)
	if cm == nil {
		return []string{fmt.Sprintf("%s: %s comes from ConfigMap %s, which is not in the installation", o, path, name)}
	}
	var cmData struct {
		Data map[string]string `json:"data"`
	}
	if err := cm.decode(&cmData); err != nil {
		return []string{fmt.Sprintf("%s: %v", cm, err)}
	}
	text, ok := cmData.Data[key]
	if !ok {
		return []string{fmt.Sprintf("%s: has no key %q, which the Deployment mounts at %s", cm, key, path)}
	}
	cfg, err := e.ParseConfig(key, []byte(text))
	if err != nil {
		return []string{fmt.Sprintf("%s: data[%q] is not a valid driftback config:\n%v", cm, key, err)}
	}
	ps = append(ps, e.secretFile(cm, o, d, c, "privateKeyFile", cfg.PrivateKeyFile, e.KeyItem)...)
	ps = append(ps, e.secretFile(cm, o, d, c, "webhookSecretFile", cfg.WebhookSecretFile, e.WebhookItem)...)
	if env := cfg.PrivateKeyEnv; env != "" {
		found := slices.ContainsFunc(c.Env, func(e envVar) bool {
			return e.Name == env && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		})
		if !found {
			ps = append(ps, fmt.Sprintf("%s: github.privateKeyEnv %s is not set from a Secret in %s", cm, env, o))
		}
	}
	for i, kc := range cfg.Kubeconfigs {
		if kc != "" {
			if _, _, _, ok := mountedFile(d, c, kc); !ok {
				ps = append(ps, fmt.Sprintf("%s: clusters[%d].kubeconfig %s is not mounted in %s", cm, i, kc, o))
			}
		}
	}
	if _, port, err := net.SplitHostPort(cfg.Listen); err != nil || port != "8080" {
		ps = append(ps, fmt.Sprintf("%s: listen %q, but the container port, probes and Service use 8080", cm, cfg.Listen))
	}
	return ps
}

// secretFile checks that github.<key>, a file the config names (none when
// ""), is the installation's Secret's item (any item when item is "")
// mounted in the container.
func (e Expect) secretFile(cm, o *Object, d *deployment, c container, key, file, item string) []string {
	if file == "" {
		return nil
	}
	kind, name, got, ok := mountedFile(d, c, file)
	switch {
	case !ok || kind != "Secret":
		return []string{fmt.Sprintf("%s: github.%s %s is not a Secret key mounted in %s", cm, key, file, o)}
	case name != e.KeySecret || (item != "" && got != item):
		return []string{fmt.Sprintf("%s: github.%s %s is Secret %s key %s; the installation names Secret %s with key %s", cm, key, file, name, got, e.KeySecret, item)}
	}
	return nil
}
