package kube

import _ "embed"

// The types in this file appear in driftback's config file and are read by
// the cluster package: one definition serves both.

// ObjectRef names a namespaced object in the target's cluster.
type ObjectRef struct {
	// Namespace of the object.
	Namespace string `yaml:"namespace" json:"namespace" schema:"required;pattern=^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" aka:"ns"`
	// Name of the object.
	Name string `yaml:"name" json:"name" schema:"required;pattern=^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"`
}

// IgnoreRule drops matching live fields from every comparison.
type IgnoreRule struct {
	// Kind the rule applies to, as Kind or Kind.group (Deployment,
	// HorizontalPodAutoscaler.autoscaling); every kind when empty.
	Kind string `yaml:"kind,omitempty" json:"kind,omitempty" schema:"pattern=^[A-Z][A-Za-z0-9]*(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"`
	// Field path as driftback prints it: spec.replicas,
	// spec.template.spec.containers[app].image,
	// metadata.annotations["example.com/owner"]. The field and everything
	// under it are ignored.
	Path string `yaml:"path" json:"path" schema:"required;minLength=1" aka:"field,jsonPath,jsonPointer,jsonPointers"`
	// Only ignore the field when this field manager owns it
	// (kube-controller-manager, an HPA's manager, ...); any owner when empty.
	Manager string `yaml:"manager,omitempty" json:"manager,omitempty" schema:"minLength=1" aka:"fieldManager,managers"`
}

// ConfiguredSource is this file: the config's JSON schema takes its
// descriptions from the doc comments above.
//
//go:embed configured.go
var ConfiguredSource string
