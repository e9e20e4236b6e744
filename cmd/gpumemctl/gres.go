package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/gresconf"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/slurmconf"
)

func init() { subcommands = append(subcommands, newGresCmd) }

func newGresCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gres",
		Short: "Generate, check and compare gres.conf from the GPU inventory",
	}
	cmd.AddCommand(newGresGenerateCmd(), newGresCheckCmd(), newGresDiffCmd(), newGresNodeLineCmd())
	return cmd
}

// renderFlags are the flags that shape a rendered gres.conf.
type renderFlags struct {
	src       nodeSource
	shards    shardFlags
	devPrefix string
	noCores   bool
	slurm     string
}

func (r *renderFlags) add(cmd *cobra.Command) {
	r.src.addFlags(cmd)
	fs := cmd.Flags()
	r.shards.add(fs)
	fs.StringVar(&r.devPrefix, "dev-prefix", "/dev", "directory holding the nvidia device files named in File=")
	fs.BoolVar(&r.noCores, "no-cores", false, "leave out Cores= (CPU affinity)")
	fs.StringVar(&r.slurm, "slurm-version", "auto", "Slurm release the file is for (22.05.8, 24.11, ...); auto asks slurmd -V, current when slurmd is not installed")
}

// release is the Slurm release named by --slurm-version.
// load reads the flags' render options and the cluster they name.
func (r *renderFlags) load(cmd *cobra.Command) (gresconf.Options, inventory.Cluster, error) {
	// gpumem.conf's values are the defaults, so that what gpumemctl renders is what
	// gpumemd writes on the same node; flags given on the command line win.
	unit, types, err := r.shards.settings(cmd)
	if err != nil {
		return gresconf.Options{}, inventory.Cluster{}, err
	}
	rel, err := gresconf.ResolveRelease(r.slurm)
	if err != nil {
		return gresconf.Options{}, inventory.Cluster{}, err
	}
	c, err := r.src.load(cmd)
	return gresconf.Options{ShardUnitMiB: unit, ShardTypes: types, DevPrefix: r.devPrefix, NoCores: r.noCores, Slurm: rel}, c, err
}

func newGresGenerateCmd() *cobra.Command {
	var (
		r                          renderFlags
		out, invOut, conf, nodeDir string
	)
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Write gres.conf (and the inventory the plugin reads) from NVML or an inventory",
		Long: `Generate gres.conf from this node's GPUs (--nvml) or from an inventory (--inventory).

With --inventory-out DIR and --nvml, this node's inventory is written to DIR/NODE.json
and gres.conf is rendered from every node in DIR, so one shared gres.conf serves the
cluster. With --out, the file is replaced only when it changes, only after slurmd -G
accepts it (when --slurm-conf is given and slurmd is installed), atomically, keeping
the previous version as gres.conf.prev.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			in := gresconf.Input{NodeGresDir: nodeDir}
			if out != "" && out != "-" {
				in.Out = out
			}
			if invOut != "" {
				dir, err := inventoryIsDir(invOut)
				if err != nil {
					return err
				}
				if dir {
					// A freshly discovered node joins the others in the directory.
					in.InventoryDir, in.Merge = invOut, r.src.inventory == ""
				} else {
					in.InventoryFile = invOut
				}
			}
			if conf != "" {
				in.Check = gresconf.Check{SlurmConf: conf}
			}
			opt, c, err := r.load(cmd)
			if err == nil && conf != "" {
				err = annotate(conf, &c)
			}
			if err != nil {
				return err
			}
			in.Cluster, in.Options = c, &opt
			res, err := gresconf.Build(in)
			reportBuild(w, w, res, in.Out, true, "warning: slurmd not installed: gres.conf not validated")
			if err != nil || in.Out != "" {
				return err
			}
			_, err = w.Write(res.Data)
			return err
		},
	}
	r.add(cmd)
	fs := cmd.Flags()
	fs.StringVar(&out, "out", "-", "gres.conf to write; - for standard output")
	fs.StringVar(&invOut, "inventory-out", "", "also write the inventory JSON here: a file, or a directory of per-node NODE.json files")
	fs.StringVar(&conf, "slurm-conf", "", "slurm.conf to validate the new gres.conf against with slurmd -G before installing it")
	fs.StringVar(&nodeDir, "node-gres", "", "write each node's slurm.conf Gres= value to DIR/NODE")
	return cmd
}

// inventoryIsDir decides what --inventory-out names, so that a directory that does
// not exist yet is not mistaken for one file (which would keep only the last node): an
// existing directory, a path ending in /, or any new path not ending in .json is a
// directory of NODE.json files (created); an existing file or a new NAME.json is one
// file holding every node.
func inventoryIsDir(path string) (bool, error) {
	fi, err := os.Stat(strings.TrimSuffix(path, "/"))
	switch {
	case err == nil && fi.IsDir():
		return true, nil
	case err == nil && strings.HasSuffix(path, "/"):
		return false, fmt.Errorf("--inventory-out %s: ends in / but is a file; name the file without /, or a directory", path)
	case err == nil:
		return false, nil
	case !errors.Is(err, os.ErrNotExist):
		return false, fmt.Errorf("--inventory-out: %w", err)
	}
	return !strings.HasSuffix(path, ".json"), nil
}

// annotate adds slurm.conf's partitions, CPUs and memory to the inventory, and checks
// that slurm.conf defines every node, since slurmd -G can only validate those.
func annotate(conf string, c *inventory.Cluster) error {
	sc, err := slurmconf.ParseFile(conf)
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if _, ok := sc.Node(n.Name); !ok {
			return fmt.Errorf("node %s is not defined in %s: add its NodeName line (Gres= as generate prints it) first", n.Name, conf)
		}
	}
	sc.Annotate(c)
	return nil
}

// reportBuild prints what a gresconf.Build wrote to out, as far as it got: the
// inventory files, unchecked (to warn) when slurmd could not validate gres.conf, then
// gres.conf (gresConf). all reports unchanged files too.
func reportBuild(out, warn io.Writer, res gresconf.Result, gresConf string, all bool, unchecked string) {
	for _, f := range res.Inventory {
		if f.Changed || all {
			report(out, f.Path, f.Changed)
		}
	}
	if res.Unchecked {
		fmt.Fprintln(warn, unchecked)
	}
	if res.Installed && (res.Changed || all) {
		report(out, gresConf, res.Changed)
	}
}

func report(w io.Writer, path string, changed bool) {
	if changed {
		fmt.Fprintf(w, "%s: written\n", path)
	} else {
		fmt.Fprintf(w, "%s: unchanged\n", path)
	}
}

func newGresCheckCmd() *cobra.Command {
	var conf string
	var nodes []string
	cmd := &cobra.Command{
		Use:         "check [GRES.CONF]",
		Annotations: manExitStatus(checkExitStatus),
		Short:       "Validate a gres.conf with slurmd -G for each node (default: gres.conf beside slurm.conf)",
		Long: `Validate a gres.conf with slurmd -G for each node (default: gres.conf beside
slurm.conf). Exit status as diff(1): 0 when slurmd accepts it for every node, 1 when it
refuses it, 2 when the check could not be made.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := filepath.Join(filepath.Dir(conf), "gres.conf")
			if len(args) == 1 {
				path = args[0]
			}
			data, err := slurmconf.Read(path)
			if err != nil {
				return trouble(err)
			}
			sc, err := slurmconf.ParseFile(conf)
			if err != nil {
				return trouble(err)
			}
			known := map[string]bool{}
			var withGres []string
			for _, n := range sc.Nodes {
				known[n.Name] = true
				if n.Get("gres") != "" {
					withGres = append(withGres, n.Name)
				}
			}
			if len(nodes) == 0 {
				nodes = withGres
			}
			// slurmd -N for a node slurm.conf does not define would only fail, after
			// creating that node's log file.
			for _, n := range nodes {
				if !known[n] {
					return trouble(fmt.Errorf("--node %s: no such NodeName in %s", n, conf))
				}
			}
			reports, err := gresconf.Slurmd{SlurmConf: conf, Nodes: nodes}.Check(data)
			for _, r := range reports {
				fmt.Fprintf(cmd.OutOrStdout(), "node %s: %d GRES records\n", r.Node, len(r.Gres))
				for _, g := range r.Gres {
					fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", g)
				}
			}
			if err != nil {
				return exitStatus{1, err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: accepted by slurmd for %d node(s)\n", path, len(reports))
			return nil
		},
	}
	cmd.Flags().StringVar(&conf, "slurm-conf", "/etc/slurm/slurm.conf", "slurm.conf holding the nodes")
	cmd.Flags().StringSliceVar(&nodes, "node", nil, "node(s) to check (default: every node with Gres= in slurm.conf)")
	return cmd
}

func newGresDiffCmd() *cobra.Command {
	var r renderFlags
	var current string
	cmd := &cobra.Command{
		Use:         "diff [GRES.CONF]",
		Annotations: manExitStatus(diffExitStatus),
		Short:       "Show how the installed gres.conf differs from what generate would write",
		Long: `Show how GRES.CONF (default /etc/slurm/gres.conf; --current names it too) differs
from what generate would write, as a unified diff. Exit status as diff(1): 0 when they
are the same, 1 when they differ, 2 when the comparison could not be made.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if cmd.Flags().Changed("current") && args[0] != current {
					return trouble(fmt.Errorf("two files to compare: %s and --current %s; name one", args[0], current))
				}
				current = args[0] // as gres check takes it
			}
			opt, c, err := r.load(cmd)
			if err != nil {
				return trouble(err)
			}
			want, err := gresconf.Render(c, opt)
			if err != nil {
				return trouble(err)
			}
			have, err := slurmconf.Read(current)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return trouble(err)
			}
			d := gresconf.Diff(have, want, current, "generated")
			if d == "" {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: up to date\n", current)
				return nil
			}
			fmt.Fprint(cmd.OutOrStdout(), d)
			return exitStatus{code: 1}
		},
	}
	r.add(cmd)
	cmd.Flags().StringVar(&current, "current", "/etc/slurm/gres.conf", "installed gres.conf to compare")
	return cmd
}

// newGresNodeLineCmd prints the slurm.conf Gres= of each node, as lines slurm.conf can
// take (or Include), so no one copies them from gres.conf's comments by hand.
func newGresNodeLineCmd() *cobra.Command {
	var r renderFlags
	var bare bool
	cmd := &cobra.Command{
		Use:   "node-line",
		Short: "Print each node's slurm.conf Gres= (NodeName=NODE Gres=...) from NVML or an inventory",
		Long: `Print the Gres= that slurm.conf needs for this node (--nvml) or for each node of an
inventory (--inventory), one "NodeName=NODE Gres=..." line per node: the same value
gpumemd writes into gres.conf's comments. Merge the Gres= into the node's own NodeName
line (with its CPUs, Sockets, RealMemory); --value prints the value alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opt, c, err := r.load(cmd)
			if err != nil {
				return err
			}
			for _, n := range c.Nodes {
				g, err := gresconf.NodeGres(n, opt)
				if err != nil {
					return fmt.Errorf("node %s: %w", n.Name, err)
				}
				if bare {
					fmt.Fprintln(cmd.OutOrStdout(), g)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "NodeName=%s Gres=%s\n", n.Name, g)
				}
			}
			return nil
		},
	}
	r.add(cmd)
	cmd.Flags().BoolVar(&bare, "value", false, "print only the Gres= value (one node)")
	return cmd
}

// confDefault is the gpumem.conf the plugins and gpumemd read: $GPUMEM_CONF, else
// /etc/slurm/gpumem.conf.
func confDefault() string { return config.Path() }
