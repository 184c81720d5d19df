// Package noise names the parts of a Kubernetes object that the API server
// or a controller writes and a person never does. It is the one lens every
// view of an object is compared through: the live object, the render and
// every re-render. A field is noise only where the server or a tool put it;
// a value Git holds is compared (docs/field-ownership.md lists all of it).
//
// It imports no driftback package; cluster and analyzer both apply it.
package noise
