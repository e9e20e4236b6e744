package why

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/bar"
	"github.com/gpumem/gpumem/internal/units"
)

// holdOf words Slurm's reasons that are the user's own to lift (or an admin's hold):
// nothing about GPUs.
func holdOf(reason string) string {
	switch {
	case reason == "JobHeldUser":
		return "you hold it (scontrol release JOBID lets it start)"
	case reason == "JobHeldAdmin":
		return "an admin holds it"
	case strings.HasPrefix(reason, "Dependency"):
		if reason == "DependencyNeverSatisfied" {
			return "it depends on a job that failed, so it can never start (scancel it, or scontrol update its Dependency)"
		}
		return "it waits for the jobs it depends on (--dependency)"
	case reason == "BeginTime":
		return "it asked not to start before its --begin time"
	}
	return ""
}

// partitionOf words Slurm's reasons about the partition or the reservation.
func partitionOf(j Job) (Cause, bool) {
	parts := strings.Join(j.Partitions, ",")
	r := j.Reason
	switch {
	case r == "PartitionDown" || r == "PartitionInactive":
		return Cause{"partition", fmt.Sprintf("partition %s does not run jobs now (%s)", parts, r)}, true
	case r == "PartitionTimeLimit":
		return Cause{"partition", fmt.Sprintf("its time limit is longer than partition %s allows: it will not start until one of them changes", parts)}, true
	case r == "PartitionNodeLimit":
		return Cause{"partition", fmt.Sprintf("it asks for more nodes than partition %s allows", parts)}, true
	case strings.HasPrefix(r, "ReqNodeNotAvail") && strings.Contains(r, "Reserved for maintenance"):
		return Cause{"reservation", "the nodes it could use are reserved for maintenance now"}, true
	case r == "Reservation" || strings.HasPrefix(r, "ReqNodeNotAvail"):
		what := "a reservation holds the nodes it could use"
		if j.Reservation != "" {
			what = fmt.Sprintf("its reservation %s is not active yet, or its nodes are busy", j.Reservation)
		}
		return Cause{"reservation", what}, true
	}
	return Cause{}, false
}

// quotaOf words a quota that holds the job: from accounting's figures when given,
// else from Slurm's reason alone.
func quotaOf(j Job, q *Quota) (Cause, bool) {
	limit := strings.HasPrefix(j.Reason, "Assoc") || strings.HasPrefix(j.Reason, "QOS")
	if q != nil && q.HeldGiB+q.NeedGiB > q.LimitGiB {
		short := q.HeldGiB + q.NeedGiB - q.LimitGiB
		return Cause{"quota", fmt.Sprintf("the GPU-memory quota of %s is %.0f GiB; running jobs under it hold %.0f GiB and this job needs %.0f GiB, so it starts when they free %.0f GiB",
			q.Name, q.LimitGiB, q.HeldGiB, q.NeedGiB, short)}, true
	}
	if limit {
		return Cause{"quota", fmt.Sprintf("a limit of its account or QOS holds it (Slurm's reason %s; gpumemctl quota %s says how much is held)", j.Reason, j.ID)}, true
	}
	return Cause{}, false
}

// priorityOf says how many jobs the user can see are ahead of this one, and what they ask.
func priorityOf(j Job, ahead []Ahead, unitMiB int64) (Cause, bool) {
	var n int
	var mib int64
	for _, a := range ahead {
		if before(a, j) {
			n, mib = n+1, mib+a.MiB
		}
	}
	if n == 0 {
		if j.Reason == "Priority" {
			return Cause{"priority", "jobs of higher priority wait for the same GPUs (other users' jobs are not shown to you)"}, true
		}
		return Cause{}, false
	}
	return Cause{"priority", fmt.Sprintf("%d job(s) ahead of it in its partitions (higher priority, or the same and submitted first) wait too, asking for %s of GPU memory in all (only jobs you may see are counted)",
		n, units.GiB(mib))}, true
}

// before says whether pending job a is considered before j: a higher priority, or the
// same one and submitted first (a lower job id), as Slurm orders its queue.
func before(a Ahead, j Job) bool {
	if a.Priority != j.Priority {
		return a.Priority > j.Priority
	}
	ai, aerr := strconv.ParseInt(a.ID, 10, 64)
	ji, jerr := strconv.ParseInt(j.ID, 10, 64)
	return aerr == nil && jerr == nil && ai < ji
}

// memoryOf compares what the job asks with what its GPUs have free now.
func memoryOf(j Job, cands []candidate, never bool, unitMiB int64) []Cause {
	if never {
		return []Cause{{"memory", "no GPU it may use could ever hold it as they are configured now"}}
	}
	var down, fitsNow, mayFit []string
	for _, c := range cands {
		if !c.ever {
			continue
		}
		if !c.Usable {
			down = append(down, c.Name+" ("+strings.ToLower(c.State)+")")
			continue
		}
		if gs := fitting(j, c.Node, unitMiB, true); int64(len(gs)) >= max(j.GPUs, 1) {
			at := fmt.Sprintf("%s GPU %d", c.Name, gs[0])
			if known(c.Node, gs) {
				fitsNow = append(fitsNow, at)
			} else {
				mayFit = append(mayFit, at)
			}
		}
	}
	var out []Cause
	if len(down) > 0 {
		out = append(out, Cause{"nodes", "not taking jobs now: " + clipList(down, 8)})
	}
	if len(fitsNow) > 0 {
		return append(out, Cause{"memory", fmt.Sprintf("GPU memory for it is free now (%s), so memory does not hold it: Slurm will start it at its next scheduling pass unless the causes above hold it",
			clipList(fitsNow, 4))})
	}
	if len(mayFit) > 0 {
		return append(out, Cause{"memory", fmt.Sprintf("it may fit on %s, or the GPU memory there may be taken: this Slurm gives the node's use only in all, and the jobs you may see do not say on which GPUs the rest lies",
			clipList(mayFit, 4))})
	}
	switch j.Kind {
	case Shard:
		var total, best int64
		bestAt := ""
		for _, c := range cands {
			if !c.Usable || !c.ever {
				continue
			}
			total += nodeFree(c.Node) * unitMiB
			for _, g := range c.GPUs {
				if len(g.MIG) > 0 || g.Shards == 0 {
					continue
				}
				if f := freeShards(g, c.Node) * unitMiB; f > best {
					best, bestAt = f, fmt.Sprintf("%s GPU %d", c.Name, g.Index)
				}
			}
		}
		if total >= j.PerGPUMiB {
			return append(out, Cause{"memory", fmt.Sprintf("fragmented: %s is free on the GPUs it may use, but no single GPU has the %s it asks (the most free on one GPU: %s, on %s)",
				units.GiB(total), units.GiB(j.PerGPUMiB), units.GiB(best), bestAt)})
		}
		return append(out, Cause{"memory", fmt.Sprintf("the GPUs it may use are full: %s free in all, it asks %s on one GPU", units.GiB(total), units.GiB(j.PerGPUMiB))})
	case MIG:
		var total, used int
		for _, c := range cands {
			for _, g := range c.GPUs {
				for _, m := range g.MIG {
					if m.Profile == j.Type {
						total++
						if m.Used {
							used++
						}
					}
				}
			}
		}
		if total == 0 {
			return append(out, Cause{"mig", fmt.Sprintf("no GPU it may use has a %s MIG instance in the MIG layout of now", j.Type)})
		}
		return append(out, Cause{"mig", fmt.Sprintf("every %s MIG instance of its partition is in use (%d of %d); no GPU has a free one in the MIG layout of now", j.Type, used, total)})
	default:
		var total, busy int
		for _, c := range cands {
			for _, g := range c.GPUs {
				if len(g.MIG) == 0 && (j.Type == "" || g.Model == j.Type) {
					total++
					if g.Whole || g.Used != 0 {
						busy++
					}
				}
			}
		}
		return append(out, Cause{"memory", fmt.Sprintf("all %d GPUs it may use are taken, as whole GPUs or by slices of shared ones (%d of %d busy)", total, busy, total)})
	}
}

// known says whether Slurm gives the use of each of gpus on n (not only the node's).
func known(n Node, gpus []int) bool {
	for _, g := range n.GPUs {
		if g.Used < 0 && slices.Contains(gpus, g.Index) {
			return false
		}
	}
	return true
}

// largestNow is the largest gpu:mem on one GPU that would start now.
func largestNow(j Job, cands []candidate, unitMiB int64) Cause {
	var best int64
	at, bound := "", false
	for _, c := range cands {
		if !c.Usable {
			continue
		}
		for _, g := range c.GPUs {
			if len(g.MIG) > 0 || g.Shards == 0 {
				continue
			}
			if f := freeShards(g, c.Node) * unitMiB; f > best {
				best, at, bound = f, fmt.Sprintf("%s GPU %d", c.Name, g.Index), g.Used < 0
			}
		}
	}
	if best < 1024 {
		return Cause{"fit", "no gpu:mem request of 1 GiB or more would start now on the GPUs it may use"}
	}
	gib := best / 1024 * 1024
	if bound {
		return Cause{"fit", fmt.Sprintf("the largest request that could start now: at most --gres=gpu:mem:%s (on %s; this Slurm does not say how much of it is held)", units.FormatSize(gib), at)}
	}
	return Cause{"fit", fmt.Sprintf("the largest request that would start now: --gres=gpu:mem:%s (on %s)", units.FormatSize(gib), at)}
}

// memoryMap draws the GPUs the job may use, most free first: '#' held, '.' free.
func memoryMap(j Job, cands []candidate, unitMiB int64) []string {
	type row struct {
		free int64
		line string
	}
	var rows []row
	var scale int64
	for _, c := range cands {
		for _, g := range c.GPUs {
			if len(g.MIG) == 0 {
				scale = max(scale, g.Shards*unitMiB)
			}
		}
	}
	for _, c := range cands {
		if !c.ever {
			continue
		}
		for _, g := range c.GPUs {
			var line string
			var free int64
			switch {
			case len(g.MIG) > 0:
				var ps []string
				for _, m := range g.MIG {
					mark := m.Profile
					if m.Used {
						mark += "(used)"
					} else {
						free++
					}
					ps = append(ps, mark)
				}
				line = fmt.Sprintf("%-8s GPU %-2d %-6s MIG: %s", c.Name, g.Index, g.Model, strings.Join(ps, " "))
				if g.Index < 0 { // Slurm's view: instances by profile, not by GPU
					line = fmt.Sprintf("%-8s MIG instances: %s", c.Name, strings.Join(ps, " "))
				}
			case g.Shards > 0:
				total := g.Shards * unitMiB
				free = freeShards(g, c.Node) * unitMiB
				note := ""
				if g.Used < 0 {
					note = " (at most: Slurm does not say per GPU)"
				}
				line = fmt.Sprintf("%-8s GPU %-2d %-6s %s %s free of %s%s", c.Name, g.Index, g.Model, bar.Scaled(total-free, total, scale),
					units.GiB(free), units.GiB(total), note)
			default:
				state := "free"
				if g.Whole || g.Used != 0 {
					state = "in use"
				}
				line = fmt.Sprintf("%-8s GPU %-2d %-6s whole GPU, %s", c.Name, g.Index, g.Model, state)
			}
			if !c.Usable {
				line += "  [node " + strings.ToLower(c.State) + "]"
				free = -1
			}
			rows = append(rows, row{free, line})
		}
	}
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].free > rows[b].free })
	var out []string
	for i, r := range rows {
		if i == MaxMapLines {
			out = append(out, fmt.Sprintf("... and %d more GPUs", len(rows)-i))
			break
		}
		out = append(out, r.line)
	}
	return out
}
