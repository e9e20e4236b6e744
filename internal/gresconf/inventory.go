package gresconf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpumem/gpumem/internal/inventory"
)

// InstallNode writes one node's inventory as DIR/NODE.json (the per-node layout that
// inventory.LoadPath and the plugin's InventoryPath read), creating DIR if needed. It
// returns the file's path and whether it changed.
func InstallNode(dir string, n inventory.Node) (string, bool, error) {
	data, err := inventory.Cluster{Nodes: []inventory.Node{n}}.Encode()
	if err != nil {
		return "", false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, fmt.Errorf("inventory: %w", err)
	}
	p := filepath.Join(dir, n.Name+".json")
	changed, err := Install(p, data, nil)
	return p, changed, err
}

// CheckWith returns an Install check that runs slurmd -G against slurmConf for nodes.
// Where slurmd is not installed it calls unchecked (to log or print a warning) and
// lets the file through: a node without slurmd still needs its gres.conf.
func CheckWith(slurmConf string, nodes []string, unchecked func()) func([]byte) error {
	v := Slurmd{SlurmConf: slurmConf, Nodes: nodes}
	return func(b []byte) error {
		_, err := v.Check(b)
		if errors.Is(err, ErrNoSlurmd) {
			if unchecked != nil {
				unchecked()
			}
			return nil
		}
		return err
	}
}
