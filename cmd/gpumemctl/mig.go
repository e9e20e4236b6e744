package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/discover"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

func init() { subcommands = append(subcommands, newMigCmd) }

func newMigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mig",
		Short: "Plan MIG layouts from demand and apply them through NVML",
	}
	cmd.AddCommand(newMigPlanCmd(), newMigApplyCmd())
	return cmd
}

func newMigPlanCmd() *cobra.Command {
	var model string
	var gpus int
	cmd := &cobra.Command{
		Use:   "plan SIZE...",
		Short: "Pack memory demands (e.g. 20G 20G 10G) into MIG layouts for a GPU model",
		Long: `Each demand gets the smallest MIG profile whose real memory holds it; the
biggest are placed first, each on the first GPU with room. The layouts print in the
form mig apply --layout takes.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := mig.Lookup(model)
			if err != nil {
				return err
			}
			sizes := make([]int64, len(args))
			for i, a := range args {
				if sizes[i], err = config.ParseMiB(a); err != nil {
					return fmt.Errorf("demand %q: %w", a, err)
				}
			}
			layouts, err := m.Plan(sizes)
			if err != nil {
				return err
			}
			if gpus > 0 && len(layouts) > gpus {
				return fmt.Errorf("%d demands need %d %s GPUs; only %d given (--gpus)", len(sizes), len(layouts), m.Key, gpus)
			}
			return printPlan(cmd.OutOrStdout(), m, layouts)
		},
	}
	cmd.Flags().StringVar(&model, "model", "h100-80gb", "GPU model: a catalog key (a100-40gb, a100-80gb, h100-80gb, h100-94gb, h200-141gb) or NVML product name")
	cmd.Flags().IntVar(&gpus, "gpus", 0, "fail unless the plan fits this many GPUs (0: no limit)")
	return cmd
}

func printPlan(w io.Writer, m mig.Model, layouts []mig.Layout) error {
	for i, l := range layouts {
		if err := m.Validate(l); err != nil {
			return fmt.Errorf("plan produced an invalid layout for GPU %d: %w", i, err)
		}
		var mib int64
		for _, pl := range l {
			p, _ := m.Profile(pl.Profile) // Validate found it
			mib += p.MiB
		}
		fmt.Fprintf(w, "--layout %d=%s\t# %d instance(s), %d MiB\n", i, l, len(l), mib)
	}
	return nil
}

func newMigApplyCmd() *cobra.Command {
	var (
		src     nodeSource
		layouts []string
		yes     bool
		dryRun  bool
	)
	cmd := &cobra.Command{
		Use:   "apply --layout GPU=PROFILE@START,... [--layout ...]",
		Short: "Repartition idle MIG GPUs through NVML (checked in full before anything changes)",
		Long: `Each --layout names a GPU index and its complete new layout, e.g.
--layout 0=3g.40gb@4,2g.20gb@0,2g.20gb@2. Every layout is checked against the GPU model's
catalog and against what NVML itself offers, and every GPU must be in MIG mode and idle,
before any instance is destroyed. Afterwards the layout is read back and compared.
Regenerate gres.conf and restart slurmd afterwards: Slurm reads MIG devices at start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			want, err := parseLayouts(layouts)
			if err != nil {
				return err
			}
			s, err := nvmlsrc.Open(src.nvml)
			if err != nil {
				return err
			}
			defer s.Close()
			if s.Kind == nvmlsrc.KindReal && !yes && !dryRun {
				return fmt.Errorf("this changes the MIG layout of real GPUs: pass --yes (or --dry-run to only check)")
			}
			return applyLayouts(cmd.OutOrStdout(), s, want, dryRun)
		},
	}
	nvmlsrc.AddFlag(cmd.Flags(), &src.nvml)
	cmd.Flags().StringArrayVar(&layouts, "layout", nil, "GPU=LAYOUT, e.g. 0=3g.40gb@4,2g.20gb@0 (repeat per GPU; 0= alone empties GPU 0)")
	cmd.Flags().BoolVar(&yes, "yes", false, "really change real GPUs")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check everything, change nothing")
	return cmd
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

func applyLayouts(w io.Writer, s *nvmlsrc.Source, want map[int]mig.Layout, dryRun bool) error {
	before, err := discover.GPUs(s, discover.Options{})
	if err != nil {
		return err
	}
	gpus := make([]int, 0, len(want))
	for g := range want {
		gpus = append(gpus, g)
	}
	sort.Ints(gpus)
	// Check every GPU concerned (model, layout, MIG mode, processes, what NVML offers)
	// before changing any, so a busy or bad second GPU never leaves the first one
	// repartitioned.
	devs := map[int]nvml.Device{}
	for _, g := range gpus {
		if err := checkLayout(before, g, want[g]); err != nil {
			return err
		}
		if sameLayout(currentLayout(before[g]), want[g]) {
			continue
		}
		dev, ret := s.NVML.DeviceGetHandleByIndex(g)
		if err := nvmlsrc.Err(ret, fmt.Sprintf("GPU %d", g)); err != nil {
			return err
		}
		if err := nvmlsrc.CheckMIG(dev, want[g]); err != nil {
			return fmt.Errorf("GPU %d: %w; nothing was changed", g, err)
		}
		devs[g] = dev
	}
	for _, g := range gpus {
		cur := currentLayout(before[g])
		switch {
		case devs[g] == nil:
			fmt.Fprintf(w, "GPU %d: already %s\n", g, want[g])
			continue
		case dryRun:
			fmt.Fprintf(w, "GPU %d: would change %s -> %s\n", g, cur, want[g])
			continue
		}
		if err := nvmlsrc.ApplyMIG(devs[g], want[g]); err != nil {
			return fmt.Errorf("GPU %d: %w", g, err)
		}
		after, err := discover.GPUs(s, discover.Options{})
		if err != nil {
			return err
		}
		if got := currentLayout(after[g]); !sameLayout(got, want[g]) {
			return fmt.Errorf("GPU %d: applied %s but NVML now reports %s", g, want[g], got)
		}
		fmt.Fprintf(w, "GPU %d: %s -> %s\n", g, cur, want[g])
	}
	if !dryRun {
		fmt.Fprintln(w, "next: gpumemctl gres generate ... and restart slurmd on this node")
	}
	return nil
}

// checkLayout checks one GPU's new layout without touching it: MIG mode on, no
// processes, and a valid layout for its model where the catalog knows the model (NVML
// checks profiles and placements again when it applies).
func checkLayout(gpus []inventory.GPU, g int, l mig.Layout) error {
	if g >= len(gpus) {
		return fmt.Errorf("GPU %d: this node has %d GPUs", g, len(gpus))
	}
	if !gpus[g].MIG {
		return fmt.Errorf("GPU %d (%s): MIG mode is off: enable it first (nvidia-smi -i %d -mig 1, then reset the GPU)", g, gpus[g].Name, g)
	}
	if m, err := mig.Lookup(gpus[g].Name); err == nil {
		if err := m.Validate(l); err != nil {
			return fmt.Errorf("GPU %d: %w", g, err)
		}
	}
	return nil
}

func currentLayout(g inventory.GPU) mig.Layout {
	l := mig.Layout{}
	for _, in := range g.Instances {
		l = append(l, mig.Placement{Profile: in.Profile, Start: in.Start})
	}
	return l
}

func sameLayout(a, b mig.Layout) bool {
	key := func(l mig.Layout) string {
		s := make([]string, len(l))
		for i, p := range l {
			s[i] = p.Profile + "@" + strconv.Itoa(p.Start)
		}
		sort.Strings(s)
		return strings.Join(s, ",")
	}
	return key(a) == key(b)
}
