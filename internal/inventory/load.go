package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// LoadPath reads an inventory from a single JSON file, or from a directory of JSON
// files (one per node, as each node's gpumemd writes it onto a shared /etc/slurm),
// merged into one cluster. Files not ending in .json are ignored so that editors'
// and atomic writers' temporary files never count.
func LoadPath(path string) (Cluster, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Cluster{}, err
	}
	if !fi.IsDir() {
		return Load(path)
	}
	names, err := filepath.Glob(filepath.Join(path, "*.json"))
	if err != nil {
		return Cluster{}, err
	}
	sort.Strings(names)
	var all Cluster
	for _, name := range names {
		if strings.HasPrefix(filepath.Base(name), ".") {
			continue
		}
		c, err := Load(name)
		if err != nil {
			return Cluster{}, fmt.Errorf("%s: %w", name, err)
		}
		all.Nodes = append(all.Nodes, c.Nodes...)
	}
	return all, all.Validate()
}
