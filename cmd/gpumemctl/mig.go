package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpumem/gpumem/internal/units"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/discover"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/migapply"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

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
	fl.Var(cliflag.NewChecked(&f.model, func(v string) error { _, err := mig.Lookup(v); return err }), "model", "GPU model for SIZE... without --inventory: a catalog key (a100-40gb, a100-80gb, h100-80gb, h100-94gb, h200-141gb) or NVML product name")
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
	fl.DurationVar(&f.historyWindow, "history-window", 7*24*time.Hour, "with --from-history: jobs seen within this long")
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
	gpus, notes := migGPUs(c)
	for _, n := range notes {
		fmt.Fprintln(w, "not planned: "+n)
	}
	if len(gpus) == 0 {
		return fmt.Errorf("no GPU of the inventory is in MIG mode with a model the catalog knows: nothing to plan")
	}
	p, err := mig.PlanCluster(gpus, demand, mig.Policy{KeepWhole: f.keepWhole})
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

// queueDemand reads the pending jobs' GPU memory: shards times the shard unit, and the
// real MiB of the MIG profile a job waits for. A job the plugin made a whole-GPU request
// carries no size and is not counted.
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
	var ds []mig.Demand
	for _, p := range shards {
		ds = append(ds, mig.Demand{MiB: p.Shards * unitMiB, Weight: 1})
	}
	typed, err := pending.GPUTypes()
	if err != nil {
		return nil, err
	}
	for _, p := range typed {
		if mib, ok := profileMiB(p.Type); ok {
			ds = append(ds, mig.Demand{MiB: mib, Weight: float64(p.Count)})
		}
	}
	return ds, nil
}

// profileMiB is the real memory of a MIG profile name in the first catalog model that
// has it; a GPU model name (not a profile) is not found.
func profileMiB(name string) (int64, bool) {
	for _, m := range mig.Catalog() {
		if p, err := m.Profile(name); err == nil {
			return p.MiB, true
		}
	}
	return 0, false
}

// migGPUs are the inventory's GPUs a plan may change, and a note for each it may not.
func migGPUs(c inventory.Cluster) ([]mig.GPU, []string) {
	var out []mig.GPU
	var notes []string
	off := 0
	for _, n := range c.Nodes {
		for _, g := range n.GPUs {
			if !g.MIG {
				off++
				continue
			}
			if _, err := mig.Lookup(g.Name); err != nil {
				notes = append(notes, fmt.Sprintf("%s GPU %d: %v", n.Name, g.Index, err))
				continue
			}
			out = append(out, mig.GPU{Node: n.Name, Index: g.Index, Model: g.Name, Layout: currentLayout(g)})
		}
	}
	if off > 0 {
		notes = append(notes, fmt.Sprintf("%d GPU(s) out of MIG mode (whole or shard GPUs) stay as they are", off))
	}
	return out, notes
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
		if err := checkLayout(before, g, want[g]); err != nil {
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

// migStatusVersion is the version of mig status's JSON; a reader checks it.
const migStatusVersion = 1

// notAsDesired is mig status's verdict, so that it can be an assert: status 1 while any
// GPU is not as desired (or not known), said in the table or, for programs, on stderr.
func notAsDesired(w io.Writer, differ int, table bool) error {
	if differ == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d GPU(s) not yet as desired", differ)
	if table {
		fmt.Fprintln(w, msg)
		return exitStatus{code: 1}
	}
	return exitStatus{1, errors.New(msg)}
}

func newMigStatusCmd() *cobra.Command {
	var desired, inv string
	var out *output
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each node's desired MIG layout against the one it has",
		Long: `Reads every desired-layout file (NODE.json) in --desired and the inventory gpumemd
writes, and prints per GPU the desired and actual layouts: "ok" where they agree,
"differs" where gpumemd has yet to apply (or could not), "unknown" where the inventory
lacks the node or GPU.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := migDefaults(cmd, func(c config.MIG, changed func(string) bool) {
				if !changed("desired") && c.Desired != "" {
					desired = c.Desired
				}
			}); err != nil {
				return err
			}
			c, err := loadInventory(inv)
			if err != nil {
				return err
			}
			ds, err := loadDesired(desired)
			if err != nil {
				return err
			}
			actual := map[string]map[int]inventory.GPU{} // node -> NVML index -> GPU
			for _, n := range c.Nodes {
				actual[n.Name] = map[int]inventory.GPU{}
				for _, g := range n.GPUs {
					actual[n.Name][g.Index] = g
				}
			}
			type gpuStatus struct {
				Node    string `json:"node"`
				GPU     int    `json:"gpu"`
				State   string `json:"state"` // ok, differs or unknown
				Desired string `json:"desired"`
				Actual  string `json:"actual,omitempty"` // empty when unknown
			}
			var status []gpuStatus
			differ := 0
			for _, d := range ds {
				want, _, _ := d.Layouts() // checked by loadDesired
				for _, g := range d.GPUs {
					st := gpuStatus{Node: d.Node, GPU: g.Index, State: "unknown", Desired: g.Layout}
					if gpu, ok := actual[d.Node][g.Index]; ok {
						cur := currentLayout(gpu)
						st.Actual, st.State = cur.String(), "ok"
						if !mig.SameLayout(cur, want[g.Index]) {
							st.State = "differs"
						}
					}
					if st.State != "ok" {
						differ++
					}
					status = append(status, st)
				}
			}
			w := cmd.OutOrStdout()
			if out.format == formatJSON {
				if err := writeJSON(w, struct {
					Version int         `json:"version"`
					GPUs    []gpuStatus `json:"gpus"`
					Differ  int         `json:"not_as_desired"`
				}{migStatusVersion, status, differ}); err != nil {
					return err
				}
				return notAsDesired(w, differ, false)
			}
			r := rows{head: []string{"node", "gpu", "state", "desired", "actual"}}
			if out.format == formatTable {
				r.head = []string{"NODE", "GPU", "STATE", "DESIRED", "ACTUAL"}
			}
			for _, st := range status {
				actual := st.Actual
				if st.State == "unknown" {
					actual = "?"
				}
				if out.format == formatTable {
					r.add(st.Node, strconv.Itoa(st.GPU), st.State, show(st.Desired), show(actual))
				} else {
					r.add(st.Node, strconv.Itoa(st.GPU), st.State, st.Desired, st.Actual)
				}
			}
			if err := r.write(w, out.format); err != nil {
				return err
			}
			return notAsDesired(w, differ, out.format == formatTable)
		},
	}
	out = addOutput(cmd.Flags(), formatTable, formatJSON, formatCSV)
	cmd.Flags().StringVar(&desired, "desired", "/etc/slurm/gpumem-mig.d", "directory of desired-layout files (NODE.json); [mig] Desired")
	cmd.Flags().StringVar(&inv, "inventory", "/etc/slurm/gpumem.d", "the inventory gpumemd writes (file or directory of NODE.json)")
	return cmd
}

func show(l string) string {
	if l == "" {
		return "(no instances)"
	}
	return l
}

// loadDesired reads every NODE.json of dir, in name order.
func loadDesired(dir string) ([]mig.Desired, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []mig.Desired
	for _, name := range names {
		b, err := atomicfile.Read(name)
		if err != nil {
			return nil, err
		}
		d, err := mig.DecodeDesired(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no desired-layout file (NODE.json) in %s: write them with gpumemctl mig plan --out", dir)
	}
	return out, nil
}
