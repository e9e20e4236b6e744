package steer

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/atomicfile"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/slurmgres"
)

// Slurm is what the controller reads from Slurm and asks of it. gpumemctl gives it
// internal/slurmcli's runner and readers; steer itself runs no command.
type Slurm interface {
	// Jobs is the shard and whole-GPU use of the running jobs.
	Jobs(ctx context.Context) ([]Use, error)
	// Pending is the pending jobs that ask for shards, in queue order.
	Pending(ctx context.Context) ([]Pending, error)
	// Weights is every node's current Weight.
	Weights(ctx context.Context) (map[string]uint32, error)
	// Update runs `scontrol update` with args.
	Update(ctx context.Context, args ...string) error
}

// Controller is one steering pass and what it needs: it reads the live shard use,
// unpins pins held too long, writes the usage snapshot job_submit pins by, and sets
// node weights so that Slurm's choice follows the policy.
type Controller struct {
	Slurm           Slurm
	Inventory       string        // the plugins' inventory: a file or a directory of NODE.json
	PlacementPolicy string        // the placement policy to steer by
	Sizes           []int64       // target sizes in shards; empty: those of the running and pending jobs
	UnitMiB         int64         // GPU memory per shard
	Base            uint32        // weight of the first node of the ranking
	DryRun          bool          // print the scontrol updates instead of running them
	Snapshot        string        // the usage snapshot to write; "": none, and nothing is unpinned
	UnpinOld        time.Duration // unpin a pinned job still pending this long after submission; 0: never
	Out             io.Writer     // what was done, one line each
	Now             func() time.Time
}

// View is the live shard side of the cluster, read from Slurm.
type View struct {
	Cluster *Cluster
	Pending []Pending
	Running []Use
	inv     inventory.Cluster
	taken   time.Time // before the first look at Slurm
}

func (c *Controller) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

func (c *Controller) perGPU(mib int64) int64 { return shard.PerGPU(mib, c.UnitMiB) }

// Read reads the inventory and the running and pending shard jobs.
func (c *Controller) Read(ctx context.Context) (*View, error) {
	inv, err := inventory.LoadPath(c.Inventory)
	if err != nil {
		return nil, err
	}
	taken := c.now()
	uses, err := c.Slurm.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	pending, err := c.Slurm.Pending(ctx)
	if err != nil {
		return nil, err
	}
	cl := NewCluster(inv, c.perGPU)
	if err := cl.Apply(uses); err != nil {
		return nil, err
	}
	return &View{Cluster: cl, Pending: pending, Running: uses, inv: inv, taken: taken}, nil
}

// Once is one pass: read, unpin, snapshot, weights.
func (c *Controller) Once(ctx context.Context) error {
	v, err := c.Read(ctx)
	if err != nil {
		return err
	}
	unpinned := c.unpin(ctx, v)
	sizes := c.sizes(v)
	current, err := c.Slurm.Weights(ctx)
	if err != nil {
		return err
	}
	if c.Snapshot != "" && !c.DryRun {
		if err := c.writeSnapshot(v, sizes, unpinned, current); err != nil {
			return err
		}
	}
	target, err := placement.ShapesOfSizes(sizes)
	if err != nil && len(sizes) > 0 {
		return fmt.Errorf("--sizes: %w", err)
	}
	name := c.PlacementPolicy
	if placement.NeedsTarget(name) && len(target) == 0 {
		name = "best-fit" // nothing to keep room for yet: fullest first
	}
	if _, err := placement.ByName(name, 1, target...); err != nil {
		return err
	}
	s := v.Cluster.State
	order := Order(s, Demands(v.Pending), target, func() placement.Policy {
		p, _ := placement.ByName(name, 1, target...)
		return p
	})
	weights := Weights(order, c.Base)
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
	fmt.Fprintf(c.Out, "steer: %s, %d pending, ranking %s\n", name, len(v.Pending), strings.Join(ranked, " "))
	for _, wt := range slices.Sorted(maps.Keys(byWeight)) {
		args := []string{"nodename=" + strings.Join(byWeight[wt], ","), "weight=" + strconv.FormatUint(uint64(wt), 10)}
		if c.DryRun {
			fmt.Fprintln(c.Out, "scontrol update", strings.Join(args, " "))
			continue
		}
		if err := c.Slurm.Update(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// unpin takes back the pins of jobs pending longer than UnpinOld: untyped shards and
// no required node. Slurm 22.05 refuses to change a typed GRES request to an untyped
// one; there only the required node is cleared. It returns the jobs unpinned.
func (c *Controller) unpin(ctx context.Context, v *View) map[string]bool {
	done := map[string]bool{}
	if c.UnpinOld <= 0 || c.Snapshot == "" {
		return done // without a snapshot nothing is pinned by gpumem
	}
	for _, p := range Unpin(v.Pending, c.now(), c.UnpinOld) {
		full := []string{"jobid=" + p.ID, "gres=" + slurmgres.Of(slurmgres.Shard, "", p.Shards).String(), "reqnodelist="}
		if c.DryRun {
			fmt.Fprintln(c.Out, "scontrol update", strings.Join(full, " "))
			continue
		}
		if err := c.Slurm.Update(ctx, full...); err == nil {
			fmt.Fprintf(c.Out, "steer: unpinned job %s (%s on %s)\n", p.ID, slurmgres.Of(slurmgres.Shard, p.Type, p.Shards), p.ReqNodes)
			done[p.ID] = true
			continue
		}
		if err := c.Slurm.Update(ctx, "jobid="+p.ID, "reqnodelist="); err != nil {
			fmt.Fprintf(c.Out, "steer: job %s: cannot unpin: %v\n", p.ID, err)
			continue
		}
		fmt.Fprintf(c.Out, "steer: job %s: required node %s cleared; Slurm kept its GRES %s\n", p.ID, p.ReqNodes, slurmgres.Of(slurmgres.Shard, p.Type, p.Shards))
		done[p.ID] = true
	}
	return done
}

// writeSnapshot writes what job_submit pins by: running shards, the shards of the
// pending jobs still pinned, which will run where they are pinned, and those of the
// pending jobs Slurm will start on its own at its next pass (ClaimQueue), by the nodes'
// weights now.
func (c *Controller) writeSnapshot(v *View, sizes []int64, unpinned map[string]bool, weight map[string]uint32) error {
	cl := NewCluster(v.inv, c.perGPU)
	if err := cl.Apply(v.Running); err != nil {
		return err
	}
	for _, p := range v.Pending {
		if p.Pinned() && !unpinned[p.ID] {
			_ = cl.TakeTyped(p.ReqNodes, p.Type, p.Shards) // a type gpumem did not make is not its pin
		}
	}
	cl.ClaimQueue(v.Pending, unpinned, weight)
	b, err := cl.Snapshot(v.taken, sizes).Encode()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(c.Snapshot, b, 0o644); err != nil {
		return fmt.Errorf("--snapshot: %w", err)
	}
	return nil
}

// sizes is the target: Sizes, else what running and pending jobs ask.
func (c *Controller) sizes(v *View) []int64 {
	if len(c.Sizes) > 0 {
		return c.Sizes
	}
	var out []int64
	for _, u := range v.Running {
		if !u.Whole && u.Shards > 0 {
			out = append(out, u.Shards)
		}
	}
	for _, p := range v.Pending {
		out = append(out, p.Shards)
	}
	return out
}
