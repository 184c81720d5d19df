// Package sourceform is the value algebra of source form (DESIGN §3): what
// a source document must hold so that the build renders the live object,
// which of those fields some construct of the build supplies, and where
// two objects differ, named lists paired by element name. A field's value
// is a Value, in which absence is a value of its own.
//
// It imports, of driftback, only internal/jsonvalue.
package sourceform
