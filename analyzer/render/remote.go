package render

import (
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/analyzer/ktree"
)

// LocalizeRemotes rewrites, in the build's filesystem only, every GitHub
// remote base entry of the tree's kustomizations to the relative path of
// the folder its fetched files are mounted at, so kustomize reads them
// there and never reaches for git. Run just before the build: the dye and
// the origin injection write kustomizations that still name the URL.
func LocalizeRemotes(fsys filesys.FileSystem, t *ktree.Tree) error {
	for _, n := range t.Nodes {
		if len(n.Remotes) == 0 || n.File == "" {
			continue
		}
		raw, err := fsys.ReadFile("/" + n.File)
		if err != nil {
			return err
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(raw, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
			return fmt.Errorf("%s: cannot rewrite its remote bases for the build", n.File)
		}
		up := strings.Repeat("../", depth(n.Dir))
		top := doc.Content[0]
		for i := 0; i+1 < len(top.Content); i += 2 {
			if k := top.Content[i].Value; k != "resources" && k != "bases" {
				continue
			}
			for _, item := range top.Content[i+1].Content {
				if folder, ok := n.Remotes[item.Value]; ok && item.Kind == yaml.ScalarNode {
					item.Value, item.Style = up+folder, 0
				}
			}
		}
		b, err := yaml.Marshal(&doc)
		if err != nil {
			return fmt.Errorf("%s: %w", n.File, err)
		}
		if err := fsys.WriteFile("/"+n.File, b); err != nil {
			return err
		}
	}
	return nil
}

// depth is the number of folders in the repo-relative folder dir.
func depth(dir string) int {
	if dir == "" {
		return 0
	}
	return strings.Count(path.Clean(dir), "/") + 1
}
