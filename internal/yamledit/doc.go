// Package yamledit edits multi-document YAML files in place, touching only
// the bytes of the nodes whose values change. Everything else the user wrote
// (comments, quoting, key order, indentation, blank lines, line endings, a
// BOM, other documents) is kept byte for byte.
//
// Edits are byte splices on the original buffer, located through the
// positions go.yaml.in/yaml/v3 reports. Every Set re-parses its result and
// refuses to keep it unless the edited document decodes to exactly the
// wanted value and no byte outside that document moved.
//
// It may import internal/jsonvalue only.
package yamledit
