package why

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/units"
)

// MaxMapLines bounds the memory map: a user's picture, not an inventory.
const MaxMapLines = 24

// Explain answers why in's job waits.
func Explain(in Input) Explanation {
	j := in.Job
	e := Explanation{Ask: ask(j, in.UnitMiB)}
	if j.State != "PENDING" {
		e.Causes = append(e.Causes, Cause{"state", fmt.Sprintf("job %s is %s, not waiting: nothing holds it", j.ID, j.State)})
		return e
	}
	cands, never := candidates(in)
	planned := plannedFor(j, cands, in.Planned)
	e.Where = where(j, cands, planned)
	if hold := holdOf(j.Reason); hold != "" {
		e.Causes = append(e.Causes, Cause{"hold", hold})
	}
	if c, ok := partitionOf(j); ok {
		e.Causes = append(e.Causes, c)
	}
	if c, ok := quotaOf(j, in.Quota); ok {
		e.Causes = append(e.Causes, c)
	}
	if c, ok := priorityOf(j, in.Ahead, in.UnitMiB); ok {
		e.Causes = append(e.Causes, c)
	}
	if j.Kind != "" {
		e.Causes = append(e.Causes, memoryOf(j, cands, never && len(planned) == 0, in.UnitMiB)...)
		if len(planned) > 0 {
			e.Causes = append(e.Causes, Cause{"mig", fmt.Sprintf("more %s instances are planned: %s (the desired MIG layout from gpumemctl mig plan; each node's gpumemd applies it once the GPU holds no job)",
				j.Type, strings.Join(planned, ", "))})
		}
		e.Map = memoryMap(j, cands, in.UnitMiB)
	}
	if !j.Start.IsZero() && j.Start.After(in.Now) {
		e.Causes = append(e.Causes, Cause{"start", fmt.Sprintf("Slurm expects to start it at %s (in %s), from the time limits of the jobs running now; it can start sooner if they end sooner",
			j.Start.Format("2006-01-02 15:04"), units.FormatDuration(j.Start.Sub(in.Now).Round(time.Minute)))})
	}
	if j.Kind == Shard {
		e.Causes = append(e.Causes, largestNow(j, cands, in.UnitMiB))
	}
	if len(e.Causes) == 0 {
		e.Causes = append(e.Causes, Cause{"slurm", fmt.Sprintf("nothing gpumem can see holds it; Slurm's reason is %q", j.Reason)})
	}
	return e
}

// ask says what the job asks for, in gpumem's words.
func ask(j Job, unitMiB int64) string {
	per := ""
	if j.Nodes > 1 {
		per = fmt.Sprintf(" on each of %d nodes", j.Nodes)
	}
	switch j.Kind {
	case Shard:
		return fmt.Sprintf("%s of GPU memory on one GPU%s, as a slice of a shared GPU (%d shards of %s)",
			units.GiB(j.PerGPUMiB), per, j.PerGPUMiB/max(unitMiB, 1), units.GiB(unitMiB))
	case MIG:
		return fmt.Sprintf("%d MIG instance(s) of profile %s%s", max(j.GPUs, 1), j.Type, per)
	case Whole:
		t := "GPU(s)"
		if j.Type != "" {
			t = j.Type + " GPU(s)"
		}
		return fmt.Sprintf("%d whole %s%s", max(j.GPUs, 1), t, per)
	}
	return "no GPU: gpumem has nothing to say about its wait"
}

// candidate is a node the job may run on, with what it could ever hold there.
type candidate struct {
	Node
	ever bool // its GPUs could hold the job once free
}

// candidates are the nodes of the job's partitions it may use (its -w and -x
// honoured); never is true when none of them could ever hold it.
func candidates(in Input) (cands []candidate, never bool) {
	j := in.Job
	never = true
	for _, n := range in.Nodes {
		if !intersects(n.Partitions, j.Partitions) || (j.ReqNodes != nil && !slices.Contains(j.ReqNodes, n.Name)) || slices.Contains(j.ExcNodes, n.Name) {
			continue
		}
		c := candidate{Node: n}
		c.ever = int64(len(fitting(j, n, in.UnitMiB, false))) >= max(j.GPUs, 1)
		if c.ever {
			never = false
		}
		cands = append(cands, c)
	}
	return cands, never
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// fitting lists the GPUs (or MIG instances, as GPU index) of n that could hold the job:
// now (free now) or ever (were they empty).
func fitting(j Job, n Node, unitMiB int64, now bool) []int {
	var out []int
	for _, g := range n.GPUs {
		switch j.Kind {
		case Shard:
			if g.Shards == 0 || len(g.MIG) > 0 {
				continue
			}
			free := g.Shards
			if now {
				free = freeShards(g, n)
			}
			if free*unitMiB >= j.PerGPUMiB {
				out = append(out, g.Index)
			}
		case Whole:
			if len(g.MIG) > 0 || (j.Type != "" && g.Model != j.Type) {
				continue
			}
			if !now || (!g.Whole && g.Used == 0) {
				out = append(out, g.Index)
			}
		case MIG:
			for _, m := range g.MIG {
				if m.Profile == j.Type && (!now || !m.Used) {
					out = append(out, g.Index)
				}
			}
		}
	}
	if now && !n.Usable {
		return nil
	}
	return out
}

// freeShards is what GPU g of node n has free now: where Slurm gives use per GPU, its
// own; else at most its slots less what visible jobs hold on it, and no more than the
// node has free in all.
func freeShards(g GPU, n Node) int64 {
	if g.Whole {
		return 0
	}
	if g.Used >= 0 {
		return max(g.Shards-g.Used, 0)
	}
	return max(min(g.Shards-g.Seen, unknownFree(n)), 0)
}

// unknownFree is what the GPUs of n whose use Slurm gives only in all have free
// together: their slots less what visible jobs hold there and the node's hidden rest.
func unknownFree(n Node) int64 {
	var free int64
	for _, g := range n.GPUs {
		if g.Used < 0 && !g.Whole {
			free += g.Shards - g.Seen
		}
	}
	return max(free-n.HiddenShards, 0)
}

// nodeFree is the shards free on a node's shared GPUs in all.
func nodeFree(n Node) int64 {
	var known int64
	for _, g := range n.GPUs {
		if len(g.MIG) == 0 && g.Shards > 0 && !g.Whole && g.Used >= 0 {
			known += max(g.Shards-g.Used, 0)
		}
	}
	return known + unknownFree(n)
}

// Visible is a running job's shards on one GPU, from a job record the user may read.
type Visible struct {
	Node   string
	GPU    int
	Shards int64
}

// AddVisible takes what the visible running jobs hold into nodes whose use Slurm gives
// only in all: per GPU Seen, and HiddenShards less it; once no use is hidden, the
// GPUs' use is known.
func AddVisible(nodes []Node, vis []Visible) {
	at := map[string]int{}
	for i, n := range nodes {
		at[n.Name] = i
	}
	for _, v := range vis {
		i, ok := at[v.Node]
		if !ok {
			continue
		}
		n := &nodes[i]
		for k := range n.GPUs {
			if g := &n.GPUs[k]; g.Index == v.GPU && g.Used < 0 {
				g.Seen += v.Shards
				n.HiddenShards -= v.Shards
			}
		}
	}
	for i := range nodes {
		n := &nodes[i]
		if n.HiddenShards > 0 {
			continue
		}
		n.HiddenShards = 0
		for k := range n.GPUs {
			if g := &n.GPUs[k]; g.Used < 0 {
				g.Used, g.Seen = g.Seen, 0
			}
		}
	}
}

// plannedFor lists, for a MIG job, the nodes it may use whose desired layout has more
// instances of its profile than they have now: "n2: 2 (has 1)".
func plannedFor(j Job, cands []candidate, planned map[string]map[string]int) []string {
	if j.Kind != MIG {
		return nil
	}
	var out []string
	for _, c := range cands {
		want := planned[c.Name][j.Type]
		have := 0
		for _, g := range c.GPUs {
			for _, m := range g.MIG {
				if m.Profile == j.Type {
					have++
				}
			}
		}
		if want > have {
			out = append(out, fmt.Sprintf("%s: %d (has %d)", c.Name, want, have))
		}
	}
	return out
}

func where(j Job, cands []candidate, planned []string) string {
	var ever []string
	for _, c := range cands {
		if c.ever {
			ever = append(ever, c.Name)
		}
	}
	parts := strings.Join(j.Partitions, ",")
	if len(ever) == 0 && len(planned) > 0 {
		return fmt.Sprintf("no node of partition %s has a %s instance now; its planned MIG layout gives some (below)", parts, j.Type)
	}
	if len(ever) == 0 {
		return fmt.Sprintf("no node of partition %s can ever hold it as the GPUs are now (ask the admins; a MIG layout may be planned for it)", parts)
	}
	return fmt.Sprintf("%d node(s) of partition %s could hold it: %s", len(ever), parts, clipList(ever, 12))
}

func clipList(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(" and %d more", len(xs)-n)
}
