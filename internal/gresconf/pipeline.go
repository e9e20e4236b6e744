package gresconf

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/inventory"
)

// Input is everything Build needs: the nodes (discovered by gpumemd or `gpumemctl gres
// generate`, pulled by `gpumemctl inventory pull`) and where each step writes. Build is
// the one path from them to an installed gres.conf: inventory -> render -> validate ->
// install. Each step runs only when the one before it succeeded, so a failure never
// leaves a gres.conf that disagrees with the inventory it came from.
type Input struct {
	Cluster inventory.Cluster // the nodes discovered or pulled
	// InventoryDir, when set, gets each node as NODE.json; with Merge, the rest of the
	// build then covers every node in the directory, so that one gres.conf on a shared
	// /etc/slurm describes the whole cluster.
	InventoryDir string
	Merge        bool
	// InventoryFile, when set, gets the whole inventory as one file.
	InventoryFile string
	// Options render gres.conf; nil stops once the inventory is written.
	Options *Options
	// NodeGresDir, when set, gets each node's slurm.conf Gres= value as DIR/NODE.
	NodeGresDir string
	// Out is the gres.conf to install; "" renders only (Result.Data).
	Out string
	// Check, when set, must accept the rendered file before it replaces Out (Check
	// asks slurmd); nil installs unchecked.
	Check Validator
}

// Validator accepts or refuses data, the gres.conf rendered for c, before Build
// installs it. unchecked says nothing could validate it and it is let through.
type Validator interface {
	Validate(c inventory.Cluster, data []byte) (unchecked bool, err error)
}

// Check is how Build validates gres.conf: slurmd -G against SlurmConf for Nodes, or
// for every node rendered when Nodes is nil. Where slurmd is not installed the file
// goes in unchecked (Result.Unchecked): a node without slurmd still needs its gres.conf.
type Check struct {
	SlurmConf string
	Nodes     []string
	Slurmd    SlurmdRunner // nil: slurmcli.Slurmd{}, slurmd from PATH
}

// Written is one file a build wrote, or found as it would have written it.
type Written struct {
	Path    string
	Changed bool
}

// Result is what a build produced, also as far as it got when it failed.
type Result struct {
	Cluster   inventory.Cluster // the nodes gres.conf was rendered for
	Inventory []Written         // the inventory files, in the order written
	Data      []byte            // the rendered gres.conf; nil without Options
	// Unchecked: slurmd is not installed, so the new gres.conf went to Out unvalidated.
	Unchecked bool
	Installed bool // Out holds Data: replaced, or already so
	Changed   bool // Out was replaced
}

// Build writes the inventory, renders gres.conf and installs it, as far as in asks.
func Build(in Input) (Result, error) {
	res := Result{Cluster: in.Cluster}
	var err error
	if res.Cluster, err = writeInventory(in, &res); err != nil {
		return res, err
	}
	if in.Options == nil {
		return res, nil
	}
	opt := *in.Options
	c := res.Cluster
	if res.Data, err = Render(c, opt); err != nil {
		return res, err
	}
	if in.NodeGresDir != "" {
		if err := writeNodeGres(in.NodeGresDir, c, opt); err != nil {
			return res, err
		}
	}
	if in.Out == "" {
		return res, nil
	}
	var check func([]byte) error
	if in.Check != nil {
		check = func(b []byte) error {
			unchecked, err := in.Check.Validate(c, b)
			res.Unchecked = unchecked
			return err
		}
	}
	if res.Changed, err = atomicfile.Install(in.Out, res.Data, check); err != nil {
		return res, err
	}
	res.Installed = true
	return res, nil
}

// Validate checks data, the gres.conf rendered for c, with slurmd -G. unchecked says
// slurmd is not installed, and the file is let through.
func (k Check) Validate(c inventory.Cluster, data []byte) (unchecked bool, err error) {
	v := Slurmd{SlurmConf: k.SlurmConf, Nodes: k.Nodes, Run: k.Slurmd}
	if v.Nodes == nil {
		for _, n := range c.Nodes {
			v.Nodes = append(v.Nodes, n.Name)
		}
	}
	_, err = v.Check(data)
	if errors.Is(err, ErrNoSlurmd) {
		return true, nil
	}
	return false, err
}

// writeInventory writes the inventory files asked for, noting each in res, and
// returns the cluster the rest of the build covers.
func writeInventory(in Input, res *Result) (inventory.Cluster, error) {
	c := in.Cluster
	if in.InventoryFile != "" {
		changed, err := inventory.WriteFile(in.InventoryFile, c)
		if err != nil {
			return c, err
		}
		res.Inventory = append(res.Inventory, Written{in.InventoryFile, changed})
	}
	if in.InventoryDir == "" {
		return c, nil
	}
	for _, n := range c.Nodes {
		path, changed, err := inventory.WriteNode(in.InventoryDir, n)
		if err != nil {
			return c, err
		}
		res.Inventory = append(res.Inventory, Written{path, changed})
	}
	if !in.Merge {
		return c, nil
	}
	return inventory.LoadPath(in.InventoryDir)
}

// writeNodeGres writes each node's slurm.conf Gres= value as DIR/NODE.
func writeNodeGres(dir string, c inventory.Cluster, opt Options) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := inventory.CheckNodeName(n.Name); err != nil {
			return err
		}
		g, err := NodeGres(n, opt)
		if err != nil {
			return err
		}
		if _, err := atomicfile.Install(filepath.Join(dir, n.Name), []byte(g+"\n"), nil); err != nil {
			return err
		}
	}
	return nil
}
