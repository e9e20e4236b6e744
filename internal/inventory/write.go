package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gpumem/gpumem/internal/atomicfile"
)

// hostNameRe is a plain host name: what a per-node file may be named after, so that a
// node name can never point the writer outside its directory or hide its file from
// LoadPath (which skips dot-files).
var hostNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckNodeName refuses a node name that is not a plain host name, before it names a file.
func CheckNodeName(name string) error {
	if len(name) > MaxNodeNameLen || !hostNameRe.MatchString(name) || strings.Contains(name, "..") {
		return fmt.Errorf("node name %q: want a plain host name (up to %d letters, digits, '-', '_', '.'; no '/' or '..')", name, MaxNodeNameLen)
	}
	return nil
}

// WriteNode writes one node's inventory as DIR/NODE.json (the per-node layout LoadPath
// and the plugin's InventoryPath read), creating DIR if needed, and keeps the previous
// version beside it. It returns the file's path and whether it changed.
func WriteNode(dir string, n Node) (string, bool, error) {
	if err := CheckNodeName(n.Name); err != nil {
		return "", false, err
	}
	data, err := Cluster{Nodes: []Node{n}}.Encode()
	if err != nil {
		return "", false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, fmt.Errorf("inventory: %w", err)
	}
	p := filepath.Join(dir, n.Name+".json")
	changed, err := atomicfile.Install(p, data, nil)
	return p, changed, err
}

// WriteFile writes the whole inventory as one file, keeping the previous version
// beside it, and reports whether it changed.
func WriteFile(path string, c Cluster) (bool, error) {
	data, err := c.Encode()
	if err != nil {
		return false, err
	}
	return atomicfile.Install(path, data, nil)
}
