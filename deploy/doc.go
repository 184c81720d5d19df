// Package deploy holds driftback's kustomize installation (the YAML in this
// folder) and the tests that render it the way kubectl, Flux or Argo CD
// would and check what it grants and how the pod runs. It has no code of
// its own beyond those tests.
package deploy
