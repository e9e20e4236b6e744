package gresconf

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/inventory"
)

// Pipeline is the one path from a node's GPUs to an installed gres.conf, shared by
// gpumemd and `gpumemctl gres generate`: discover -> inventory -> render -> validate
// -> install -> hook. Each step runs only when the one before it succeeded, so a
// failure never leaves a gres.conf that disagrees with the inventory it came from.
type Pipeline struct {
	// InventoryDir, when set, gets each discovered node as NODE.json; with Merge, the
	// rest of the pipeline then covers every node in the directory, so that one gres.conf
	// on a shared /etc/slurm describes the whole cluster.
	InventoryDir string
	Merge        bool
	// InventoryFile, when set, gets the whole discovered inventory as one file.
	InventoryFile string
	// Render gives the render options once the inventory is written; nil stops there.
	Render func() (Options, error)
	// NodeGresDir, when set, gets each node's slurm.conf Gres= value as DIR/NODE.
	NodeGresDir string
	// Out is the gres.conf to install; "" renders only (Result.Data).
	Out string
	// Check must accept the file rendered for c before it replaces Out (see
	// CheckWith); nil installs unchecked.
	Check func(c inventory.Cluster, data []byte) error
	// Hook runs once Out has changed.
	Hook func()
	// Wrote hears of each inventory file written or found unchanged, and of Out.
	Wrote func(path string, changed bool)
}

// Result is what a run produced.
type Result struct {
	Cluster inventory.Cluster // the nodes gres.conf was rendered for
	Data    []byte            // the rendered gres.conf; nil when Render is nil
	Changed bool              // Out was replaced
}

// Run runs the pipeline on the nodes discover returns.
func (p Pipeline) Run(discover func() (inventory.Cluster, error)) (Result, error) {
	c, err := discover()
	if err != nil {
		return Result{}, err
	}
	if c, err = p.writeInventory(c); err != nil {
		return Result{Cluster: c}, err
	}
	res := Result{Cluster: c}
	if p.Render == nil {
		return res, nil
	}
	opt, err := p.Render()
	if err != nil {
		return res, err
	}
	if res.Data, err = Render(c, opt); err != nil {
		return res, err
	}
	if p.NodeGresDir != "" {
		if err := writeNodeGres(p.NodeGresDir, c, opt); err != nil {
			return res, err
		}
	}
	if p.Out == "" {
		return res, nil
	}
	var check func([]byte) error
	if p.Check != nil {
		check = func(b []byte) error { return p.Check(c, b) }
	}
	res.Changed, err = atomicfile.Install(p.Out, res.Data, check)
	if err != nil {
		return res, err
	}
	p.wrote(p.Out, res.Changed)
	if res.Changed && p.Hook != nil {
		p.Hook()
	}
	return res, nil
}

// writeInventory writes the inventory files asked for and returns the cluster the
// rest of the pipeline covers.
func (p Pipeline) writeInventory(c inventory.Cluster) (inventory.Cluster, error) {
	if p.InventoryFile != "" {
		changed, err := inventory.WriteFile(p.InventoryFile, c)
		if err != nil {
			return c, err
		}
		p.wrote(p.InventoryFile, changed)
	}
	if p.InventoryDir == "" {
		return c, nil
	}
	for _, n := range c.Nodes {
		path, changed, err := inventory.WriteNode(p.InventoryDir, n)
		if err != nil {
			return c, err
		}
		p.wrote(path, changed)
	}
	if !p.Merge {
		return c, nil
	}
	return inventory.LoadPath(p.InventoryDir)
}

func (p Pipeline) wrote(path string, changed bool) {
	if p.Wrote != nil {
		p.Wrote(path, changed)
	}
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

// CheckWith returns a Pipeline check that runs slurmd -G against slurmConf for nodes,
// or for every node of the cluster when nodes is nil. Where slurmd is not installed it
// calls unchecked (to log or print a warning) and lets the file through: a node
// without slurmd still needs its gres.conf.
func CheckWith(slurmConf string, nodes []string, unchecked func()) func(inventory.Cluster, []byte) error {
	return func(c inventory.Cluster, b []byte) error {
		v := Slurmd{SlurmConf: slurmConf, Nodes: nodes}
		if v.Nodes == nil {
			for _, n := range c.Nodes {
				v.Nodes = append(v.Nodes, n.Name)
			}
		}
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
