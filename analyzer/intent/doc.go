// Package intent reduces a live object to what a person wants of it: the
// fields its render has, plus those the object's managedFields say a
// person set (View), and says whether that view equals the render without
// building it (Matches), which is all a quiet cluster asks.
//
// It imports, of driftback, internal/jsonvalue, internal/kube and
// analyzer/sourceform.
package intent
