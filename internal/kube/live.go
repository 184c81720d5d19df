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
	// Wrote says who wrote the live value of p, a field the render holds
	// as rendered (another value). Must not keep p either.
	Wrote(p jsonvalue.Path, rendered any) Write
}

// Writer classes who wrote a live value the render disagrees with.
type Writer int

const (
	// WriterUnknown: nothing records who wrote it; the difference counts
	// as a change, as it did before ownership was read.
	WriterUnknown Writer = iota
	// WriterPerson: a manager other than the GitOps tool's writer, or a
	// write through a subresource: a person's change.
	WriterPerson
	// WriterTool: only the GitOps tool's own writer owns the field, so the
	// tool applied that value (or the API server or a webhook changed it
	// inside the tool's request). driftback's render is then not what the
	// tool applied: a fidelity finding, never an edit.
	WriterTool
)

// Causes of a WriterTool value, where the object's record tells them.
const (
	// CauseRender: the tool's last-applied configuration holds the live
	// value, so the tool rendered something other than driftback did.
	CauseRender = "render"
	// CauseServer: the last-applied configuration holds driftback's
	// value, so the API server or a webhook changed it during the apply.
	CauseServer = "server"
)

// Write is Ownership.Wrote's answer.
type Write struct {
	By Writer
	// Managers names the tool's writers that own the field (WriterTool)
	// or the other managers that do (WriterPerson), as "name (Operation)".
	Managers []string
	// Cause is CauseRender, CauseServer or "" (the record cannot tell:
	// a server-side apply keeps no copy of what it sent).
	Cause string
}
