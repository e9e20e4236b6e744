package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/units"
)

// The mig command group and mig plan. What a plan decides (demand, which GPUs, the
// layouts, their checks) is internal/mig's; these commands read flags and inputs and
// print. mig apply is in migapply.go, mig status in migstatus.go.

func init() { subcommands = append(subcommands, newMigCmd) }

func newMigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mig",
		Short: "Plan MIG layouts from demand and apply them through NVML",
	}
	cmd.PersistentFlags().String("config", confDefault(), "gpumem.conf, whose [mig] section gives the defaults of --keep-whole, --desired, --journal and --idle-timeout, and ShardUnit that of --shard-unit")
	cmd.AddCommand(newMigPlanCmd(), newMigApplyCmd(), newMigStatusCmd())
	return cmd
}

// migDefaults fills the flags the command line left out from gpumem.conf's [mig]
// section (a flag given wins); each target is a flag name and where it goes.
func migDefaults(cmd *cobra.Command, set func(c config.MIG, changed func(string) bool)) error {
	path, err := confPath(cmd)
	if err != nil {
		return err
	}
	c, err := config.LoadMIG(path)
	if err != nil {
		return err
	}
	set(c, func(name string) bool { return cmd.Flags().Changed(name) })
	return nil
}

type migPlanFlags struct {
	model, inventory, demand, out string
	gpus                          int
	fromQueue                     bool
	keepWhole                     float64
	unitMiB                       int64
	fromHistory                   []string
	historyWindow                 time.Duration
	historyWeight                 float64
	historySize                   string
}

func newMigPlanCmd() *cobra.Command {
	var f migPlanFlags
	cmd := &cobra.Command{
		Use:   "plan [SIZE...]",
		Short: "Plan MIG layouts from demand: by hand (SIZE... --model) or for the cluster (--inventory)",
		Long: `Without --inventory, each SIZE (e.g. 20G 20G 10G) gets the smallest MIG profile of
--model whose real memory holds it, packed onto as few GPUs as it takes; the layouts
print in the form mig apply --layout takes.

With --inventory, the cluster's GPUs in MIG mode are planned for the demand: SIZE
arguments (weight 1 each), a --demand file ("SIZE [WEIGHT]" a line), with
--from-queue the pending jobs (their shards, or the MIG type they wait for), and with
--from-history the jobs gpumemd recorded within --history-window (each node's history
database, or its URL), each counting --history-weight. A share of
MIG GPUs stays one full instance (--keep-whole); GPUs out of MIG mode are never planned.
The plan and its explanation print; with --out, one desired-layout file per node
(NODE.json) is written there for review, for gpumemd --mig-desired to apply.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := migDefaults(cmd, func(c config.MIG, changed func(string) bool) {
				if !changed("keep-whole") {
					f.keepWhole = c.KeepWhole
				}
			}); err != nil {
				return err
			}
			if err := confShardUnit(cmd, &f.unitMiB); err != nil {
				return err
			}
			if f.inventory == "" {
				return planByHand(cmd.OutOrStdout(), f, args)
			}
			return planCluster(cmd, f, args)
		},
	}
	fl := cmd.Flags()
	f.model = "h100-80gb"
	fl.Var(cliflag.NewChecked(&f.model, func(v string) error { _, err := mig.Lookup(v); return err }), "model", "GPU model for SIZE... without --inventory: a catalog key ("+strings.Join(mig.Keys(), ", ")+") or NVML product name")
	fl.IntVar(&f.gpus, "gpus", 0, "without --inventory: fail unless the plan fits this many GPUs (0: no limit)")
	fl.StringVar(&f.inventory, "inventory", "", "plan the MIG GPUs of this inventory (file or directory of NODE.json)")
	fl.StringVar(&f.demand, "demand", "", "demand file: SIZE [WEIGHT] a line")
	fl.BoolVar(&f.fromQueue, "from-queue", false, "add the pending jobs' requests (squeue) to the demand")
	f.keepWhole = config.DefaultMIG().KeepWhole
	fl.Var(cliflag.NewParsed(&f.keepWhole, "share", config.ParseShare), "keep-whole", "share of MIG GPUs kept as one full instance (0-1); [mig] KeepWhole")
	f.unitMiB = shard.DefaultUnitMiB
	addShardUnit(fl, &f.unitMiB, "GPU memory per shard, as in gpumem.conf ShardUnit (reads pending shard jobs)")
	fl.StringVar(&f.out, "out", "", "write one desired-layout file per node (NODE.json) into this directory")
	fl.StringSliceVar(&f.fromHistory, "from-history", nil, "add the jobs gpumemd recorded: a history database (gpumemd --history-db) or a gpumemd URL such as http://gpu01:9402 (repeat or comma-separate)")
	cliflag.DurationVar(fl, &f.historyWindow, "history-window", 7*24*time.Hour, "with --from-history: jobs seen within this long")
	fl.Float64Var(&f.historyWeight, "history-weight", 1, "with --from-history: what one past job counts against one pending job")
	fl.StringVar(&f.historySize, "history-size", "alloc", "with --from-history: size a past job by what Slurm gave it (alloc) or the most it held (peak)")
	return cmd
}

func planByHand(w io.Writer, f migPlanFlags, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("no demand: give sizes (e.g. 20G 10G), or --inventory with --demand or --from-queue")
	}
	m, err := mig.Lookup(f.model)
	if err != nil {
		return err
	}
	sizes, err := parseSizes(args)
	if err != nil {
		return usageError(err)
	}
	if err != nil {
		return err
	}
	layouts, err := m.Plan(sizes)
	if err != nil {
		return err
	}
	if f.gpus > 0 && len(layouts) > f.gpus {
		return fmt.Errorf("%d demands need %d %s GPUs; only %d given (--gpus)", len(sizes), len(layouts), m.Key, f.gpus)
	}
	return printPlan(w, m, layouts)
}

func parseSizes(args []string) ([]int64, error) {
	sizes := make([]int64, len(args))
	for i, a := range args {
		var err error
		if sizes[i], err = units.Setting(a, units.UnitRequired); err != nil {
			return nil, fmt.Errorf("demand %q: %w", a, err)
		}
	}
	return sizes, nil
}

func planCluster(cmd *cobra.Command, f migPlanFlags, args []string) error {
	w := cmd.OutOrStdout()
	c, err := loadInventory(f.inventory)
	if err != nil {
		return err
	}
	sizes, err := parseSizes(args)
	if err != nil {
		return err
	}
	var demand []mig.Demand
	for _, s := range sizes {
		demand = append(demand, mig.Demand{MiB: s, Weight: 1})
	}
	if f.demand != "" {
		b, err := os.ReadFile(f.demand)
		if err != nil {
			return err
		}
		ds, err := mig.ParseDemand(string(b), func(v string) (int64, error) { return units.Setting(v, units.BareMiB) })
		if err != nil {
			return fmt.Errorf("%s: %w", f.demand, err)
		}
		demand = append(demand, ds...)
	}
	if f.fromQueue {
		ds, err := queueDemand(cmd.Context(), queueRunner(), f.unitMiB)
		if err != nil {
			return err
		}
		demand = append(demand, ds...)
	}
	if len(f.fromHistory) > 0 {
		ds, err := f.historyDemand(cmd.Context(), time.Now())
		if err != nil {
			return err
		}
		demand = append(demand, ds...)
	}
	if len(demand) == 0 {
		return fmt.Errorf("no demand: give sizes, --demand FILE, --from-queue or --from-history")
	}
	gpus, notes := mig.ClusterGPUs(c)
	for _, n := range notes {
		fmt.Fprintln(w, "not planned: "+n)
	}
	if len(gpus) == 0 {
		return fmt.Errorf("no GPU of the inventory is in MIG mode with a model the catalog knows: nothing to plan")
	}
	p, err := mig.PlanCluster(gpus, demand, mig.LayoutPolicy{KeepWhole: f.keepWhole})
	if err != nil {
		return err
	}
	for _, line := range p.Explain() {
		fmt.Fprintln(w, line)
	}
	if f.out == "" {
		return nil
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	for _, d := range p.DesiredFiles() {
		b, err := d.Encode()
		if err != nil {
			return err
		}
		if err := inventory.CheckNodeName(d.Node); err != nil {
			return err
		}
		path := filepath.Join(f.out, d.Node+".json")
		if err := atomicfile.Write(path, b, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s\n", path)
	}
	return nil
}

// queueDemand reads the pending jobs (squeue) and turns their GPU memory into demand
// (mig.QueueDemand): shards times the shard unit, and the real MiB of the MIG profile a
// job waits for.
func queueDemand(ctx context.Context, queue slurmcli.Runner, unitMiB int64) ([]mig.Demand, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	pending, err := slurmcli.ReadPending(ctx, queue)
	if err != nil {
		return nil, err
	}
	shards, err := pending.Shards(time.Local)
	if err != nil {
		return nil, err
	}
	typed, err := pending.GPUTypes()
	if err != nil {
		return nil, err
	}
	counts := make([]int64, len(shards))
	for i, p := range shards {
		counts[i] = p.Shards
	}
	waits := make([]mig.TypedWait, len(typed))
	for i, p := range typed {
		waits[i] = mig.TypedWait{Type: p.Type, Count: p.Count}
	}
	return mig.QueueDemand(counts, waits, unitMiB), nil
}

func printPlan(w io.Writer, m mig.Model, layouts []mig.Layout) error {
	for i, l := range layouts {
		mib, err := m.LayoutMiB(l)
		if err != nil {
			return fmt.Errorf("plan produced an invalid layout for GPU %d: %w", i, err)
		}
		fmt.Fprintf(w, "--layout %d=%s\t# %d instance(s), %d MiB\n", i, l, len(l), mib)
		fmt.Fprintf(w, "#   %s\n", m.Draw(l))
	}
	return nil
}
