package deploycheck

import "fmt"

// A partial, typed view of the Deployment: the fields the checks read,
// nothing more, so an unrelated field never stops a check.

type securityContext struct {
	RunAsNonRoot             *bool  `json:"runAsNonRoot"`
	RunAsUser                *int64 `json:"runAsUser"`
	ReadOnlyRootFilesystem   *bool  `json:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool  `json:"allowPrivilegeEscalation"`
	Privileged               *bool  `json:"privileged"`
	Capabilities             *struct {
		Add  []string `json:"add"`
		Drop []string `json:"drop"`
	} `json:"capabilities"`
	SeccompProfile *struct {
		Type string `json:"type"`
	} `json:"seccompProfile"`
}

type probe struct {
	HTTPGet *struct {
		Path string `json:"path"`
		Port any    `json:"port"`
	} `json:"httpGet"`
}

type keyToPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
}

type volumeSource struct {
	ConfigMap *struct {
		Name  string      `json:"name"`
		Items []keyToPath `json:"items"`
	} `json:"configMap"`
	Secret *struct {
		SecretName string      `json:"secretName"` // in a volume
		Name       string      `json:"name"`       // in a projection
		Items      []keyToPath `json:"items"`
	} `json:"secret"`
	Projected *struct {
		Sources []volumeSource `json:"sources"`
	} `json:"projected"`
}

type envVar struct {
	Name      string `json:"name"`
	ValueFrom *struct {
		FieldRef *struct {
			FieldPath string `json:"fieldPath"`
		} `json:"fieldRef"`
		SecretKeyRef *struct {
			Name string `json:"name"`
			Key  string `json:"key"`
		} `json:"secretKeyRef"`
		ResourceFieldRef *struct {
			Resource string `json:"resource"`
			Divisor  string `json:"divisor"`
		} `json:"resourceFieldRef"`
	} `json:"valueFrom"`
}

type container struct {
	Name  string   `json:"name"`
	Image string   `json:"image"`
	Args  []string `json:"args"`
	Env   []envVar `json:"env"`
	Ports []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	} `json:"ports"`
	LivenessProbe  *probe `json:"livenessProbe"`
	ReadinessProbe *probe `json:"readinessProbe"`
	Resources      struct {
		Requests map[string]string `json:"requests"`
		Limits   map[string]string `json:"limits"`
	} `json:"resources"`
	SecurityContext *securityContext `json:"securityContext"`
	VolumeMounts    []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
		SubPath   string `json:"subPath"`
	} `json:"volumeMounts"`
}

type deployment struct {
	Spec struct {
		Replicas *int `json:"replicas"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				ServiceAccountName           string           `json:"serviceAccountName"`
				AutomountServiceAccountToken *bool            `json:"automountServiceAccountToken"`
				SecurityContext              *securityContext `json:"securityContext"`
				Containers                   []container      `json:"containers"`
				InitContainers               []container      `json:"initContainers"`
				Volumes                      []struct {
					Name string `json:"name"`
					volumeSource
				} `json:"volumes"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// the single Deployment; nil (with a problem) otherwise.
func (e Expect) theDeployment(objs []*Object) (*Object, *deployment, []string) {
	ds := find(objs, "Deployment")
	if len(ds) != 1 {
		return nil, nil, []string{fmt.Sprintf("want exactly one Deployment, got %d", len(ds))}
	}
	var d deployment
	if err := ds[0].decode(&d); err != nil {
		return nil, nil, []string{fmt.Sprintf("%s: %v", ds[0], err)}
	}
	if len(d.Spec.Template.Spec.Containers) != 1 {
		return nil, nil, []string{fmt.Sprintf("%s: want one container, got %d", ds[0], len(d.Spec.Template.Spec.Containers))}
	}
	return ds[0], &d, nil
}
