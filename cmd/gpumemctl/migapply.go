package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/discover"
	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/migapply"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

// mig apply: flags and the layouts asked for, checked against the node (mig.CheckTarget)
// and handed to the journaled applier (internal/migapply).

type migApplyFlags struct {
	src                nodeSource
	layouts            []string
	desired            string
	node, scontrol     string
	journal            string
	idleTimeout        time.Duration
	yes, dryRun, quiet bool
}

func newMigApplyCmd() *cobra.Command {
	var f migApplyFlags
	cmd := &cobra.Command{
		Use:   "apply (--layout GPU=PROFILE@START,... [--layout ...] | --desired NODE.json)",
		Short: "Repartition this node's MIG GPUs, journaled (checked in full before anything changes)",
		Long: `Each --layout names a GPU index and its complete new layout, e.g.
--layout 0=3g.40gb@4,2g.20gb@0,2g.20gb@2; --desired reads a desired-layout file instead.
Every layout is checked against the GPU model's catalog and against what NVML itself
offers, and every GPU must be in MIG mode and idle, before any instance is destroyed;
afterwards the layout is read back and compared. This runs the same journaled apply as
gpumemd --mig-apply (docs/mig.md): with --node, the node is drained in Slurm first,
waited for and resumed afterwards. --yes applies; --dry-run prints the steps; without
either nothing runs (status 2). One apply runs per node at a time: while gpumemd or
another mig apply is applying (it holds JOURNAL.lock), this one is refused with that
apply named, and changes nothing.
Afterwards regenerate gres.conf, give the node its new Gres= in slurm.conf, and restart
slurmctld (22.05; scontrol reconfigure from 23.11) and then slurmd: slurmctld takes a
changed count of MIG devices only from slurm.conf at start (docs/mig.md). gpumemd
--mig-apply does this through --mig-reload and waits for it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !f.yes && !f.dryRun {
				// Any backend: a fake node's file or a mock is changed as a GPU is, and
				// --node drains a real Slurm node either way.
				return usageError(fmt.Errorf("mig apply repartitions GPUs (and with --node drains the node): pass --yes to apply, or --dry-run to print the steps"))
			}
			if err := migDefaults(cmd, func(c config.MIG, changed func(string) bool) {
				if !changed("journal") {
					f.journal = c.Journal
				}
				if !changed("idle-timeout") {
					f.idleTimeout = c.IdleTimeout
				}
			}); err != nil {
				return err
			}
			want, err := applyInput(f)
			if err != nil {
				return err
			}
			s, err := nvmlsrc.Open(f.src.nvml)
			if err != nil {
				return err
			}
			defer s.Close()
			return applyLayouts(cmd.OutOrStdout(), s, want, f)
		},
	}
	nvmlsrc.AddFlag(cmd.Flags(), &f.src.nvml)
	fl := cmd.Flags()
	fl.StringArrayVar(&f.layouts, "layout", nil, "GPU=LAYOUT, e.g. 0=3g.40gb@4,2g.20gb@0 (repeat per GPU; 0= alone empties GPU 0)")
	fl.StringVar(&f.desired, "desired", "", "apply this desired-layout file (NODE.json from mig plan --out) instead of --layout")
	fl.StringVar(&f.node, "node", "", "Slurm node to drain, wait for and resume around the change (empty: the node is not in Slurm or already drained)")
	fl.StringVar(&f.scontrol, "scontrol", "scontrol", "scontrol binary, with --node")
	fl.StringVar(&f.journal, "journal", config.DefaultMIG().Journal, "journal of the apply; gpumemd's --mig-journal, so gpumemd leaves gres.conf alone meanwhile; [mig] Journal")
	f.idleTimeout = config.DefaultMIG().IdleTimeout
	fl.Var(cliflag.NewParsed(&f.idleTimeout, "duration", config.ParseIdleTimeout), "idle-timeout", "with --node: wait this long for its jobs, then give up and resume; [mig] IdleTimeout")
	fl.BoolVar(&f.yes, "yes", false, "really change the GPUs (without it, or --dry-run, nothing runs)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "check everything, print the steps, change nothing")
	fl.BoolVar(&f.quiet, "quiet", false, "print no step lines")
	return cmd
}

func applyInput(f migApplyFlags) (map[int]mig.Layout, error) {
	if f.desired == "" {
		return parseLayouts(f.layouts)
	}
	if len(f.layouts) > 0 {
		return nil, fmt.Errorf("--desired and --layout: give one")
	}
	b, err := atomicfile.Read(f.desired)
	if err != nil {
		return nil, err
	}
	d, err := mig.DecodeDesired(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.desired, err)
	}
	want, _, err := d.Layouts()
	return want, err
}

func parseLayouts(args []string) (map[int]mig.Layout, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no --layout given: name at least one GPU, e.g. --layout 0=3g.40gb@4,3g.40gb@0")
	}
	out := map[int]mig.Layout{}
	for _, a := range args {
		idx, spec, ok := strings.Cut(a, "=")
		gpu, err := strconv.Atoi(idx)
		if !ok || err != nil || gpu < 0 {
			return nil, fmt.Errorf("--layout %q: want GPU=LAYOUT, e.g. 0=3g.40gb@4,2g.20gb@0", a)
		}
		if _, dup := out[gpu]; dup {
			return nil, fmt.Errorf("--layout: GPU %d given twice", gpu)
		}
		l, err := mig.ParseLayout(spec)
		if err != nil {
			return nil, err
		}
		out[gpu] = l
	}
	return out, nil
}

func applyLayouts(w io.Writer, s *nvmlsrc.Source, want map[int]mig.Layout, f migApplyFlags) error {
	before, err := discover.GPUs(s, discover.Options{})
	if err != nil {
		return err
	}
	gpus := make([]int, 0, len(want))
	for g := range want {
		gpus = append(gpus, g)
	}
	sort.Ints(gpus)
	for _, g := range gpus {
		if err := mig.CheckTarget(before, g, want[g]); err != nil {
			return err
		}
	}
	a := &migapply.Applier{Node: f.node, GPUs: migapply.NVML{Src: s}, Journal: f.journal, IdleTimeout: f.idleTimeout, Cmd: "gpumemctl mig apply"}
	if !f.quiet {
		a.Log = w
	}
	if f.node != "" {
		a.Slurm = slurmcli.ScontrolNode{Run: slurmcli.Runner{Path: f.scontrol, Timeout: 30 * time.Second}}
	}
	changes, err := a.Plan(want)
	if err != nil {
		return err
	}
	if f.dryRun {
		for _, c := range changes {
			if err := a.GPUs.Check(c.Index, want[c.Index]); err != nil {
				return fmt.Errorf("GPU %d: %w; nothing would change", c.Index, err)
			}
		}
		for _, c := range changes {
			fmt.Fprintf(w, "GPU %d: would change %s -> %s\n", c.Index, c.From, c.To)
		}
		for i, step := range a.Steps(changes) {
			fmt.Fprintf(w, "%d. %s\n", i+1, step)
		}
		return nil
	}
	if err := a.Apply(want); err != nil {
		return err
	}
	for _, g := range gpus {
		changed := false
		for _, c := range changes {
			if c.Index == g {
				fmt.Fprintf(w, "GPU %d: %s -> %s\n", g, c.From, c.To)
				changed = true
			}
		}
		if !changed {
			fmt.Fprintf(w, "GPU %d: already %s\n", g, want[g])
		}
	}
	if len(changes) > 0 {
		fmt.Fprintln(w, "next: gpumemctl gres generate ..., this node's new Gres= in slurm.conf, restart slurmctld (or scontrol reconfigure from 23.11), then slurmd")
	}
	return nil
}
