package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/discover"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

// nodeSource is where a command reads GPU facts from: NVML (for this node), or an
// inventory file or directory that gpumemd or an earlier generation wrote.
type nodeSource struct {
	nvml      string
	inventory string
	node      string
	typeStyle string
}

func (s *nodeSource) addFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	nvmlsrc.AddFlag(fs, &s.nvml)
	fs.StringVar(&s.inventory, "inventory", "", "read GPUs from this inventory JSON file or per-node directory instead of NVML")
	fs.StringVar(&s.node, "node", "", "Slurm NodeName of this node (default: the short host name); with --inventory, only this node")
	s.typeStyle = discover.TypeShort
	fs.Var(cliflag.NewChoice(&s.typeStyle, discover.TypeShort, discover.TypeSlurm), "type-style", "GPU GRES type names: short (h100) or slurm (nvidia_h100_80gb_hbm3, as AutoDetect=nvml names it)")
}

// load returns the cluster the command works on.
func (s *nodeSource) load(cmd *cobra.Command) (inventory.Cluster, error) {
	if s.inventory != "" {
		if cmd.Flags().Changed(nvmlsrc.FlagName) {
			return inventory.Cluster{}, usageError(fmt.Errorf("--inventory and --nvml both given: use one source of GPU facts"))
		}
		c, err := loadInventory(s.inventory)
		if err != nil {
			return c, err
		}
		return onlyNode(c, s.node)
	}
	node, err := s.discover()
	if err != nil {
		return inventory.Cluster{}, err
	}
	return inventory.Cluster{Nodes: []inventory.Node{node}}, nil
}

func (s *nodeSource) discover() (inventory.Node, error) {
	name := s.node
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return inventory.Node{}, fmt.Errorf("no --node and no host name: %w", err)
		}
		name = shortHost(h)
	}
	src, err := nvmlsrc.Open(s.nvml)
	if err != nil {
		return inventory.Node{}, err
	}
	defer src.Close()
	opt := discover.OptionsFor(src, name)
	opt.TypeStyle = s.typeStyle
	return discover.Node(src, opt)
}

func shortHost(h string) string {
	for i, c := range h {
		if c == '.' {
			return h[:i]
		}
	}
	return h
}

func onlyNode(c inventory.Cluster, name string) (inventory.Cluster, error) {
	if name == "" {
		return c, nil
	}
	for _, n := range c.Nodes {
		if n.Name == name {
			return inventory.Cluster{Nodes: []inventory.Node{n}}, nil
		}
	}
	var names []string
	for _, n := range c.Nodes {
		names = append(names, n.Name)
	}
	return inventory.Cluster{}, fmt.Errorf("node %q not in the inventory; it has %v", name, names)
}

// loadInventory reads an inventory file or directory, and where there is none says
// what writes it.
func loadInventory(path string) (inventory.Cluster, error) {
	c, err := inventory.LoadPath(path)
	return c, missingInventory(path, err)
}

// missingInventory says what writes the inventory when there is none at path; other
// errors pass through.
func missingInventory(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no inventory at %s: gpumemd --write-inventory writes it on every GPU node "+
			"(or gpumemctl gres generate --inventory-out); name another with --inventory", path)
	}
	return err
}
