module github.com/driftback/driftback

go 1.26.8

require sigs.k8s.io/kustomize/kyaml v0.21.2

require (
	github.com/blang/semver/v4 v4.0.0 // indirect
	github.com/go-errors/errors v1.5.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.48.0 // indirect
	sigs.k8s.io/kustomize/api v0.21.2 // indirect
)
