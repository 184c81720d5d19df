package installtest

import (
	"errors"

	"sigs.k8s.io/yaml"
)

// configKeys are the top-level keys of driftback.yaml: a YAML block of the
// docs made only of them is (part of) a config.
var configKeys = map[string]bool{"github": true, "instance": true, "pollInterval": true, "listen": true,
	"clusters": true, "defaults": true, "targets": true, "dashboards": true}

// ConfigBlock parses a YAML block whose top-level keys are all config
// keys: a whole config when it has github, else a fragment of one.
func ConfigBlock(b Block) (map[string]any, bool) {
	if b.Lang != "yaml" {
		return nil, false
	}
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(b.Text), &doc); err != nil || len(doc) == 0 {
		return nil, false
	}
	for k := range doc {
		if !configKeys[k] {
			return nil, false
		}
	}
	return doc, true
}

// GuideConfig is the config of install.md's step 2, the file the user
// saves as driftback.yaml, byte for byte.
func GuideConfig(blocks []Block) ([]byte, error) {
	for _, b := range Under(blocks, "2.") {
		if doc, ok := ConfigBlock(b); ok && doc["github"] != nil {
			return []byte(b.Text), nil
		}
	}
	return nil, errors.New("step 2 of docs/install.md shows no whole config")
}
