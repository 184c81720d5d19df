package kube

import "github.com/driftback/driftback/internal/jsonvalue"

// LiveObject is one live object, already sanitized (status, server metadata
// and operational annotations removed; Secret values redacted). Server-
// allocated fields stay: they are noise only where the render lacks them.
type LiveObject struct {
	Object map[string]any
	// Owner says who set the fields the render lacks; nil when the object
	// came without managedFields, and then only rendered fields compare.
	Owner Ownership
	// MetadataOnly marks an object read without its body (a Secret listed
	// from a cluster): only its metadata compares.
	MetadataOnly bool
	// Unseen names the fields of a metadata-only object that a person set
	// in the unread body (a Secret's data keys), from managedFields; never
	// a value.
	Unseen []jsonvalue.Path
	// UnseenBy names the managers that own the Unseen fields.
	UnseenBy []string
	// UnseenRelease is a JSON patch of metadata.managedFields that drops
	// those managers' claims on the Unseen fields (each entry tested
	// first, so it fails once they wrote again): what clears the
	// evidence once the values are Git's again, since nothing else does.
	UnseenRelease string
}

// Ownership tells, for a field that the render lacks, whether a person (a
// manager other than the GitOps applier) set it in the cluster — keep it —
// or nobody did — a server default, drop it. The cluster package builds one
// from metadata.managedFields.
type Ownership interface {
	// UserOwned must not keep p: a caller may reuse it once it returns.
	UserOwned(p jsonvalue.Path) bool
	// Ignored lists fields taken out of comparison (an HPA's replica
	// count): the render's value stands there.
	Ignored() []jsonvalue.Path
}
