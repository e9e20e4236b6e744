package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/steer"
)

func init() { subcommands = append(subcommands, newSteerCmd) }

type steerFlags struct {
	inventory, policy string
	sizes             []int64
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

The target sizes (--sizes, in shards) are the sizes the ranking keeps room for; without
them, the sizes of the running and pending shard jobs are used.

With per-GPU shard types (gpumem.conf ShardTypes = per-gpu), --snapshot writes the
shards taken on each GPU (running jobs and pending pinned ones) and the target sizes to
the file job_submit reads (gpumem.conf UsageSnapshot), so that it pins each new shard
job to the GPU --policy's twin there (PinPolicy) chooses. A pinned job still pending
--unpin-after its submission is unpinned (untyped shard:N, no required node), so a pin
never holds a job longer than that.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.interval <= 0 {
				return fmt.Errorf("--interval %s; want a positive duration such as 5s", f.interval)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			for {
				if err := steerOnce(ctx, &f, cmd.OutOrStdout()); err != nil {
					if f.once {
						return err
					}
					fmt.Fprintln(cmd.ErrOrStderr(), "gpumemctl steer:", err)
				}
				if f.once {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(f.interval):
				}
			}
		},
	}
	fl := c.PersistentFlags()
	fl.StringVar(&f.inventory, "inventory", "/etc/slurm/gpumem.d", "the plugins' inventory (file or directory of NODE.json)")
	fl.StringVar(&f.policy, "policy", placement.OursName, "placement policy to steer by: first-fit, best-fit, gpumem, fgd, ...")
	fl.Int64SliceVar(&f.sizes, "sizes", nil, "target job sizes in shards, repeated for weight (default: the running and pending jobs')")
	fl.Int64Var(&f.unitMiB, "shard-unit-mib", shard.DefaultUnitMiB, "GPU memory per shard, as in gpumem.conf ShardUnit")
	c.Flags().Uint32Var(&f.base, "base-weight", 1, "weight of the first node of the ranking; the next get one more each")
	c.Flags().DurationVar(&f.interval, "interval", 5*time.Second, "time between two rankings")
	c.Flags().BoolVar(&f.once, "once", false, "rank and set weights once, then exit")
	c.Flags().BoolVar(&f.dryRun, "dry-run", false, "print the scontrol updates instead of running them")
	c.Flags().StringVar(&f.snapshot, "snapshot", "", "write the usage snapshot job_submit pins by to this file (gpumem.conf UsageSnapshot); empty: none")
	c.Flags().DurationVar(&f.unpinAfter, "unpin-after", 20*time.Second, "with --snapshot: unpin a pinned shard job still pending this long after its submission (0: never)")
	c.AddCommand(newSteerReportCmd(&f))
	return c
}

// steerView is the live shard side of the cluster, read from Slurm.
type steerView struct {
	cluster *steer.Cluster
	pending []steer.Pending
	running []steer.Use
	inv     inventory.Cluster
	taken   time.Time // before the first look at Slurm
}

func readView(ctx context.Context, f *steerFlags) (*steerView, error) {
	if f.unitMiB <= 0 {
		return nil, fmt.Errorf("--shard-unit-mib %d; want a positive size such as 1024", f.unitMiB)
	}
	inv, err := inventory.LoadPath(f.inventory)
	if err != nil {
		return nil, err
	}
	taken := time.Now()
	reader := slurmcli.JobReader{Scontrol: slurmRunner("scontrol"), Squeue: slurmRunner("squeue")}
	jobs, err := reader.Show(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, bad := range jobs.Bad {
		// A record that cannot be read is left out; Slurm still holds its GPUs.
		fmt.Fprintf(os.Stderr, "steer: %v\n", bad)
	}
	var uses []steer.Use
	for _, u := range jobs.Uses() {
		uses = append(uses, steer.Use(u))
	}
	queue, err := slurmOut(ctx, "squeue", "-h", "-t", "PD", "-o", slurmcli.PendingFormat)
	if err != nil {
		return nil, err
	}
	queued, err := slurmcli.ParsePending(queue, time.Local)
	if err != nil {
		return nil, err
	}
	pending := make([]steer.Pending, len(queued))
	for i, p := range queued {
		pending[i] = steer.Pending(p)
	}
	cl := steer.NewCluster(inv, func(mib int64) int64 { return shard.PerGPU(mib, f.unitMiB) })
	if err := cl.Apply(uses); err != nil {
		return nil, err
	}
	return &steerView{cluster: cl, pending: pending, running: uses, inv: inv, taken: taken}, nil
}

// unpin takes back the pins of jobs pending longer than --unpin-after: untyped shards
// and no required node. Slurm 22.05 refuses to change a typed GRES request to an
// untyped one; there only the required node is cleared. It returns the jobs unpinned.
func unpin(ctx context.Context, f *steerFlags, v *steerView, w io.Writer) map[string]bool {
	done := map[string]bool{}
	if f.unpinAfter <= 0 || f.snapshot == "" {
		return done // without a snapshot nothing is pinned by gpumem
	}
	for _, p := range steer.Unpin(v.pending, time.Now(), f.unpinAfter) {
		full := []string{"update", "jobid=" + p.ID, "gres=shard:" + strconv.FormatInt(p.Shards, 10), "reqnodelist="}
		if f.dryRun {
			fmt.Fprintln(w, "scontrol", strings.Join(full, " "))
			continue
		}
		if _, err := slurmOut(ctx, "scontrol", full...); err == nil {
			fmt.Fprintf(w, "steer: unpinned job %s (shard:%s:%d on %s)\n", p.ID, p.Type, p.Shards, p.ReqNodes)
			done[p.ID] = true
			continue
		}
		if _, err := slurmOut(ctx, "scontrol", "update", "jobid="+p.ID, "reqnodelist="); err != nil {
			fmt.Fprintf(w, "steer: job %s: cannot unpin: %v\n", p.ID, err)
			continue
		}
		fmt.Fprintf(w, "steer: job %s: required node %s cleared; Slurm kept its GRES shard:%s:%d\n", p.ID, p.ReqNodes, p.Type, p.Shards)
		done[p.ID] = true
	}
	return done
}

// writeSnapshot writes what job_submit pins by: running shards, and the shards of the
// pending jobs still pinned, which will run where they are pinned.
func writeSnapshot(f *steerFlags, v *steerView, sizes []int64, unpinned map[string]bool) error {
	cl := steer.NewCluster(v.inv, func(mib int64) int64 { return shard.PerGPU(mib, f.unitMiB) })
	if err := cl.Apply(v.running); err != nil {
		return err
	}
	for _, p := range v.pending {
		if p.Pinned() && !unpinned[p.ID] {
			_ = cl.TakeTyped(p.ReqNodes, p.Type, p.Shards) // a type gpumem did not make is not its pin
		}
	}
	b, err := cl.Snapshot(v.taken, sizes).Encode()
	if err != nil {
		return err
	}
	tmp := f.snapshot + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("--snapshot: %w", err)
	}
	if err := os.Rename(tmp, f.snapshot); err != nil {
		return fmt.Errorf("--snapshot: %w", err)
	}
	return nil
}

// sizes is the target: --sizes, else what running and pending jobs ask.
func (v *steerView) sizes(f *steerFlags) []int64 {
	if len(f.sizes) > 0 {
		return f.sizes
	}
	var out []int64
	for _, u := range v.running {
		if !u.Whole && u.Shards > 0 {
			out = append(out, u.Shards)
		}
	}
	for _, p := range v.pending {
		out = append(out, p.Shards)
	}
	return out
}

func steerOnce(ctx context.Context, f *steerFlags, w io.Writer) error {
	v, err := readView(ctx, f)
	if err != nil {
		return err
	}
	unpinned := unpin(ctx, f, v, w)
	if f.snapshot != "" && !f.dryRun {
		if err := writeSnapshot(f, v, v.sizes(f), unpinned); err != nil {
			return err
		}
	}
	target, err := placement.ShapesOfSizes(v.sizes(f))
	if err != nil && len(v.sizes(f)) > 0 {
		return fmt.Errorf("--sizes: %w", err)
	}
	name := f.policy
	if placement.NeedsTarget(name) && len(target) == 0 {
		name = "best-fit" // nothing to keep room for yet: fullest first
	}
	if _, err := placement.ByName(name, 1, target...); err != nil {
		return err
	}
	s := v.cluster.State
	order := steer.Order(s, steer.Demands(v.pending), target, func() placement.Policy {
		p, _ := placement.ByName(name, 1, target...)
		return p
	})
	weights := steer.Weights(order, f.base)
	out, err := slurmOut(ctx, "scontrol", "-o", "show", "node")
	if err != nil {
		return err
	}
	now, err := slurmcli.ParseNodes(out)
	if err != nil {
		return err
	}
	current := map[string]uint32{}
	for _, n := range now {
		current[n.Name] = n.Weight
	}
	// One scontrol call per weight, naming every node that moves to it.
	byWeight := map[uint32][]string{}
	for n := range s.Nodes {
		if wt, ok := current[s.Nodes[n].Name]; !ok || wt != weights[n] {
			byWeight[weights[n]] = append(byWeight[weights[n]], s.Nodes[n].Name)
		}
	}
	ranked := make([]string, len(order))
	for i, n := range order {
		ranked[i] = s.Nodes[n].Name
	}
	fmt.Fprintf(w, "steer: %s, %d pending, ranking %s\n", name, len(v.pending), strings.Join(ranked, " "))
	for _, wt := range slices.Sorted(maps.Keys(byWeight)) {
		args := []string{"update", "nodename=" + strings.Join(byWeight[wt], ","), "weight=" + strconv.FormatUint(uint64(wt), 10)}
		if f.dryRun {
			fmt.Fprintln(w, "scontrol", strings.Join(args, " "))
			continue
		}
		if _, err := slurmOut(ctx, "scontrol", args...); err != nil {
			return err
		}
	}
	return nil
}

// slurmOut runs a Slurm client command with a deadline, so a hung controller never
// hangs the steering loop.
func slurmOut(ctx context.Context, name string, args ...string) (string, error) {
	return slurmRunner(name).Run(ctx, args...)
}

func slurmRunner(name string) slurmcli.Runner {
	return slurmcli.Runner{Path: name, Timeout: 30 * time.Second}
}

func newSteerReportCmd(f *steerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "report",
		Short: "Print running and pending shard jobs and GPU memory left stranded, as JSON",
		Long: `Stranded shards are free shards on GPUs where no pending shard job's size fits, or
where none of --sizes fits when nothing is pending: memory no job of those sizes can use
until something ends.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := readView(cmd.Context(), f)
			if err != nil {
				return err
			}
			sizes := f.sizes
			if len(v.pending) > 0 {
				sizes = nil
				for _, p := range v.pending {
					sizes = append(sizes, p.Shards)
				}
			}
			free, stranded := steer.Stranded(v.cluster.State, sizes)
			type gpu struct {
				Node string `json:"node"`
				GPU  int    `json:"gpu"`
				Used int64  `json:"used"`
				Free int64  `json:"free"`
			}
			rep := struct {
				Running  int   `json:"running_shard_uses"`
				Pending  int   `json:"pending_shard_jobs"`
				Free     int64 `json:"free_shards"`
				Stranded int64 `json:"stranded_shards"`
				GPUs     []gpu `json:"gpus"`
			}{Running: len(v.running), Pending: len(v.pending), Free: free, Stranded: stranded}
			for _, nd := range v.cluster.State.Nodes {
				for i, dv := range nd.Devices {
					rep.GPUs = append(rep.GPUs, gpu{Node: nd.Name, GPU: i, Used: dv.Used, Free: dv.Free()})
				}
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			return enc.Encode(rep)
		},
	}
}
