// Package kubetest runs a real kube-apiserver and etcd (built from Go
// modules by tools/kube-assets.sh) on 127.0.0.1 for tests. Stopping the
// apiserver before etcd matters: the other order leaves the apiserver
// retrying etcd for a minute.
//
// It is for tests; no product code imports it.
package kubetest
