package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// -o is every command's one output flag: its value is checked as the
// command line is parsed, so a bad one is a usage error (exit 2, with
// where to find the usage) before anything is read, as for --log-level.

// outputFlag is -o, one of a command's formats.
type outputFlag struct {
	value   *string
	formats []string
}

func (f outputFlag) String() string { return *f.value }

func (f outputFlag) Set(s string) error {
	if !slices.Contains(f.formats, s) {
		return fmt.Errorf("use %s", orList(f.formats))
	}
	*f.value = s
	return nil
}

func (f outputFlag) Type() string { return "format" }

// addOutputFlag gives cmd -o/--output, taking one of formats (the first
// is the default) into *value, and completes it.
func addOutputFlag(cmd *cobra.Command, value *string, formats []string) {
	*value = formats[0]
	cmd.Flags().VarP(outputFlag{value: value, formats: formats}, "output", "o", "output format: "+orList(formats))
	cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}

// printDocument prints v as one JSON document, or for "yaml" the same
// document as YAML, ending in one newline: -o json and -o yaml of every
// command.
func printDocument(w io.Writer, v any, format string) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err == nil && format == "yaml" {
		b, err = jsonToYAML(b)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", strings.TrimSuffix(string(b), "\n"))
	return err
}

// jsonToYAML writes a JSON document as YAML, keys in the JSON's order, so
// that -o yaml is -o json's document and field names.
func jsonToYAML(j []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(j, &doc); err != nil {
		return nil, err
	}
	blockStyle(&doc)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	enc.CompactSeqIndent() // "- " at its key's indent, as kubectl prints
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// blockStyle drops the JSON's flow collections and quotes: the encoder
// quotes a string only where YAML would read it as something else, and
// writes a file's content as a literal block.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}
