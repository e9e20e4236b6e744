package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/bar"
	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/steer"
	"github.com/gpumem/gpumem/internal/versioned"
)

func init() { subcommands = append(subcommands, newSteerCmd) }

type steerFlags struct {
	inventory, policy string
	sizes             sizeList
	unitMiB           int64
	base              uint32
	interval          time.Duration
	once, dryRun      bool
	snapshot          string
	unpinAfter        time.Duration
}

func newSteerCmd() *cobra.Command {
	var f steerFlags
	c := &cobra.Command{
		Use:   "steer",
		Short: "Steer shard jobs to where a placement policy would put them: node weights, and with --snapshot the usage job_submit pins by",
		Long: `Reads the live shard use of every node (scontrol -d show job), the pending shard jobs
(squeue) and the inventory, ranks the nodes with shareable GPUs as --policy would fill
them, and sets their Weight with scontrol update, so that Slurm's own selection (the
lowest-weight node that fits, for the main scheduler and backfill alike) follows the
policy. Only nodes whose weight changes are updated; nodes without shareable GPUs keep
theirs. Weights never make a node unusable, so no job waits longer than under first fit
for want of a node. Runs every --interval until stopped, or once with --once.

The target sizes (--sizes, GPU memory as in gpu:mem requests) are the sizes the ranking
keeps room for; without them, the sizes of the running and pending shard jobs are used.

With per-GPU shard types (gpumem.conf ShardTypes = per-gpu), --snapshot writes the
shards taken on each GPU (running jobs and pending pinned ones) and the target sizes to
the file job_submit reads (gpumem.conf UsageSnapshot), so that it pins each new shard
job to the GPU --policy's twin there (PinPolicy) chooses. A pinned job still pending
--unpin-after its submission is unpinned (untyped shard:N, no required node), so a pin
never holds a job longer than that.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.interval <= 0 {
				return usageError(fmt.Errorf("--interval %s; want a positive duration such as 5s", f.interval))
			}
			if err := confShardUnit(cmd, &f.unitMiB); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var passes cadence
			for {
				start := time.Now()
				if err := steerOnce(ctx, &f, cmd.OutOrStdout()); err != nil {
					if f.once {
						return err
					}
					fmt.Fprintln(cmd.ErrOrStderr(), "gpumemctl steer:", err)
				}
				if f.once {
					return nil
				}
				took := time.Since(start)
				passes.add(start, took)
				select {
				case <-ctx.Done():
					fmt.Fprintln(cmd.OutOrStdout(), "steer:", passes.String())
					return nil
				case <-time.After(untilNext(f.interval, took)):
				}
			}
		},
	}
	fl := c.PersistentFlags()
	fl.StringVar(&f.inventory, "inventory", "/etc/slurm/gpumem.d", "the plugins' inventory (file or directory of NODE.json)")
	fl.StringVar(&f.policy, "policy", placement.OursName, "placement policy to steer by: first-fit, best-fit, gpumem, fgd, ...")
	fl.Var(&f.sizes, "sizes", "target job sizes with their units (5G,10G,20G), a size repeated for weight (default: the running and pending jobs')")
	f.unitMiB = shard.DefaultUnitMiB
	addShardUnit(fl, &f.unitMiB, "GPU memory per shard, as in gpumem.conf ShardUnit")
	addConfig(fl)
	c.Flags().Uint32Var(&f.base, "base-weight", 1, "weight of the first node of the ranking; the next get one more each")
	cliflag.DurationVar(c.Flags(), &f.interval, "interval", 5*time.Second, "time between two rankings")
	c.Flags().BoolVar(&f.once, "once", false, "rank and set weights once, then exit")
	c.Flags().BoolVar(&f.dryRun, "dry-run", false, "print the scontrol updates instead of running them")
	c.Flags().StringVar(&f.snapshot, "snapshot", "", "write the usage snapshot job_submit pins by to this file (gpumem.conf UsageSnapshot); empty: none")
	cliflag.DurationVar(c.Flags(), &f.unpinAfter, "unpin-after", 20*time.Second, "with --snapshot: unpin a pinned shard job still pending this long after its submission (0: never)")
	c.AddCommand(newSteerReportCmd(&f))
	return c
}

// untilNext is the wait after a pass that took took, so that passes start every
// interval: job_submit's view is as old as the snapshot plus its reload interval, and a
// wait of a whole interval after each pass made it older by the pass's own time, which
// grows with slurmctld's load (a 2 s interval gave a snapshot every 3.3 s in the 64-node
// lab at twice its load, docs/steering.md). A pass that overran still leaves a quarter
// interval to slurmctld, so that a loaded controller is not read back to back.
func untilNext(interval, took time.Duration) time.Duration {
	return max(interval-took, interval/4)
}

// cadence sums up the passes of a steer run, for its log on exit: how often the
// snapshot was really written is what the simulator's model of pinning needs
// (test/steer/scale.sh reads it back).
type cadence struct {
	n               int
	first, last     time.Time
	longest, summed time.Duration
}

func (c *cadence) add(start time.Time, took time.Duration) {
	if c.n == 0 {
		c.first = start
	}
	c.n++
	c.last = start
	c.summed += took
	c.longest = max(c.longest, took)
}

// String is "N passes, one every X s, each Y s on average and Z s at most"; the mean
// gap is between the first pass's start and the last's.
func (c *cadence) String() string {
	if c.n == 0 {
		return "0 passes"
	}
	every := "-"
	if c.n > 1 {
		every = fmt.Sprintf("%.2f", c.last.Sub(c.first).Seconds()/float64(c.n-1))
	}
	return fmt.Sprintf("%d passes, one every %s s, each %.2f s on average and %.2f s at most",
		c.n, every, c.summed.Seconds()/float64(c.n), c.longest.Seconds())
}

// controller wires the flags and Slurm's command line to the steering controller.
func (f *steerFlags) controller(w io.Writer) (*steer.Controller, error) {
	if f.unitMiB <= 0 {
		return nil, usageError(fmt.Errorf("--shard-unit %dM; want a positive size such as 1G", f.unitMiB))
	}
	if _, err := os.Stat(f.inventory); err != nil {
		return nil, missingInventory(f.inventory, err)
	}
	sl := &slurmCLI{
		reader: jobReader(), scontrol: controlRunner(), queue: queueRunner(), errs: os.Stderr,
	}
	return &steer.Controller{Slurm: sl, Inventory: f.inventory, PlacementPolicy: f.policy, Sizes: f.sizes.shards(f.unitMiB), UnitMiB: f.unitMiB,
		Base: f.base, DryRun: f.dryRun, Snapshot: f.snapshot, UnpinOld: f.unpinAfter, Out: w}, nil
}

func steerOnce(ctx context.Context, f *steerFlags, w io.Writer) error {
	c, err := f.controller(w)
	if err != nil {
		return err
	}
	return c.Once(ctx)
}

// slurmCLI is steer.Slurm on Slurm's command line.
type slurmCLI struct {
	reader   slurmcli.JobReader
	scontrol slurmcli.Runner
	queue    slurmcli.Runner // the queue's client, for the pending jobs
	errs     io.Writer
}

func (s *slurmCLI) Jobs(ctx context.Context) ([]steer.Use, error) {
	jobs, err := s.reader.Show(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, bad := range jobs.Bad {
		fmt.Fprintf(s.errs, "steer: %v\n", bad)
	}
	for _, j := range jobs.Unread {
		// Slurm still holds its GPUs: they count as the queue lists them.
		fmt.Fprintf(s.errs, "steer: job %s: its record is not read; its GPUs are counted from squeue on any GPU of their type\n", j.ID)
	}
	return jobs.Uses(), nil
}

func (s *slurmCLI) Pending(ctx context.Context) ([]steer.Pending, error) {
	queue, err := slurmcli.ReadPending(ctx, s.queue)
	if err != nil {
		return nil, err
	}
	return queue.Shards(time.Local)
}

func (s *slurmCLI) Weights(ctx context.Context) (map[string]uint32, error) {
	nodes, err := slurmcli.ScontrolNode{Run: s.scontrol}.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	current := map[string]uint32{}
	for _, n := range nodes {
		current[n.Name] = n.Weight
	}
	return current, nil
}

func (s *slurmCLI) Update(ctx context.Context, args ...string) error {
	_, err := s.scontrol.Run(ctx, append([]string{"update"}, args...)...)
	return err
}

// slurmTimeout bounds each Slurm client command, so a hung controller never hangs the
// steering loop (nor the exporter's).
const slurmTimeout = 30 * time.Second

// controlRunner and queueRunner run Slurm's clients from PATH within slurmTimeout.
func controlRunner() slurmcli.Runner {
	r := slurmcli.Scontrol("")
	r.Timeout = slurmTimeout
	return r
}

func queueRunner() slurmcli.Runner {
	r := slurmcli.Squeue("")
	r.Timeout = slurmTimeout
	return r
}

// jobReader reads the jobs' records through both.
func jobReader() slurmcli.JobReader {
	return slurmcli.JobReader{Scontrol: controlRunner(), Squeue: queueRunner()}
}

func newSteerReportCmd(f *steerFlags) *cobra.Command {
	var out *output
	c := &cobra.Command{
		Use:   "report",
		Short: "Print running and pending shard jobs, and the GPU memory left stranded per GPU",
		Long: `Stranded shards are free shards on GPUs where no pending shard job's size fits, or
where none of --sizes fits when nothing is pending: memory no job of those sizes can use
until something ends. -o json carries "version": 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := confShardUnit(cmd, &f.unitMiB); err != nil {
				return err
			}
			c, err := f.controller(cmd.OutOrStdout())
			if err != nil {
				return err
			}
			v, err := c.Read(cmd.Context())
			if err != nil {
				return err
			}
			return writeSteerReport(cmd.OutOrStdout(), out.format, v, f.sizes.shards(f.unitMiB))
		},
	}
	out = addOutput(c.Flags(), formatTable, formatJSON, formatCSV)
	return c
}

func writeSteerReport(w io.Writer, format string, v *steer.View, sizes []int64) error {
	if len(v.Pending) > 0 {
		sizes = nil
		for _, p := range v.Pending {
			sizes = append(sizes, p.Shards)
		}
	}
	free, stranded := steer.Stranded(v.Cluster.State, sizes)
	rep := versioned.NewSteerReport(len(v.Running), len(v.Pending), free, stranded)
	for _, nd := range v.Cluster.State.Nodes {
		for i, dv := range nd.Devices {
			rep.GPUs = append(rep.GPUs, versioned.SteerGPU{Node: nd.Name, GPU: i, Used: dv.Used, Free: dv.Free()})
		}
	}
	if format == formatJSON {
		return writeJSON(w, rep)
	}
	r := rows{head: []string{"node", "gpu", "used_shards", "free_shards"}}
	if format == formatTable {
		r.head = []string{"NODE", "GPU", "USED", "FREE", "SHARDS (# used)"}
	}
	for _, g := range rep.GPUs {
		if format == formatTable {
			r.add(g.Node, strconv.Itoa(g.GPU), strconv.FormatInt(g.Used, 10), strconv.FormatInt(g.Free, 10), bar.Of(g.Used, g.Used+g.Free))
		} else {
			r.add(g.Node, strconv.Itoa(g.GPU), strconv.FormatInt(g.Used, 10), strconv.FormatInt(g.Free, 10))
		}
	}
	if err := r.write(w, format); err != nil || format == formatCSV {
		return err
	}
	_, err := fmt.Fprintf(w, "%d running shard use(s), %d pending shard job(s); %d shard(s) free, %d of them stranded\n",
		rep.Running, rep.Pending, rep.Free, rep.Stranded)
	return err
}
