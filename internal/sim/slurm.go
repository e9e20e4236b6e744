package sim

import (
	"fmt"
	"slices"

	"github.com/gpumem/gpumem/internal/placement"
)

// Slurm's own scheduling, as slurmctld runs it in the lab (sched/backfill, select/cons_tres,
// SchedulerParameters=bf_interval=1,bf_continue): the main scheduler at each job's end
// and, for the jobs submitted since, every batch_sched_delay, and a backfill pass every
// bf_interval. Read from job_scheduler.c (schedule), controller.c (_slurmctld_background),
// job_mgr.c (job_allocate), proc_req.c (_slurm_rpc_epilog_complete) and backfill.c
// (_attempt_backfill, _add_reservation, _set_slot_time) of 24.11.

// slurmMain is the main scheduler: the queue in priority order, each job started where
// it fits. A job that does not fit ends the pass for its partition (one in the lab), so
// nothing behind it starts, with one exception: a job with required nodes (a pin) only
// takes those nodes out of the pass, and the jobs behind it go on without them.
// pinnedTo gives the node a job is pinned to, -1 for none.
func slurmMain(s *placement.State, pick func(j int, now int64) placement.Policy, ds []placement.Demand, queue []int, now int64,
	pinnedTo func(j int) int, startJob func(int, placement.Choice, int64) error) ([]int, error) {
	var view *placement.State // s without the nodes of the pins that did not fit; nil: none yet
	kept := queue[:0:0]
	for i, j := range queue {
		on := s
		if view != nil {
			on = view
		}
		if c, ok := pick(j, now).Place(on, &ds[j]); ok {
			if err := startJob(j, c, now); err != nil {
				return nil, err
			}
			if view != nil {
				if err := view.Commit(c, &ds[j]); err != nil {
					return nil, err
				}
			}
			continue
		}
		n := pinnedTo(j)
		if n < 0 {
			return append(kept, queue[i:]...), nil
		}
		kept = append(kept, j)
		if view == nil {
			view = s.Clone()
		}
		shut(view, n)
		view.Reindex()
	}
	return kept, nil
}

// shut makes node n take nothing more in s (its index is left to the caller to rebuild).
func shut(s *placement.State, n int) {
	for i := range s.Nodes[n].Devices {
		dv := &s.Nodes[n].Devices[i]
		dv.Used = dv.Capacity
	}
}

// slot is a running job's shards on a device until its planned end.
type slot struct {
	dev   int // flat device index
	units int64
	till  int64
}

// hold is a backfill reservation: its job's whole node over [from, till].
type hold struct {
	node       int
	from, till int64
}

// backfillAll is Slurm's backfill pass: each queued job in order, up to BackfillDepth,
// either starts now where it delays no job ahead of it, or gets a reservation at its
// earliest start, which the jobs behind it must leave alone. schedule protects the head
// only; Slurm protects every job it has looked at.
//
// A reservation holds what Slurm's holds, not a count of shards: backfill's map of the
// future (node_space) is a bitmap of nodes per time slice, so a reservation takes its
// job's whole node, whatever the job asks of it, from its start rounded down to
// resolution (bf_resolution, 60 s unless set) until its start plus its time limit
// rounded up. A job behind it may use that node only where its own window, now or
// later until its time limit, misses that span. Running jobs count by what they hold,
// until their planned end (select's will-run test). The reservation goes to the first
// node, in Slurm's order (node weights where steer ranks them), that takes the job
// then (equal: slurm.conf's order where no weights rank them). Single-GPU shard jobs
// only (the streams).
func backfillAll(s *placement.State, pick func(j int, now int64) placement.Policy, ds []placement.Demand, jobs []Job, queue []int, run endHeap, now, resolution int64, equal []int,
	startJob func(int, placement.Choice, int64) error, backfilled *int) ([]int, error) {
	var flat [][2]int // device index -> node, device on it
	at := make([][]int, len(s.Nodes))
	for n := range s.Nodes {
		at[n] = make([]int, len(s.Nodes[n].Devices))
		for i := range s.Nodes[n].Devices {
			at[n][i] = len(flat)
			flat = append(flat, [2]int{n, i})
		}
	}
	busy := make([]slot, 0, len(run)+len(queue))
	for _, e := range run {
		if e.choice.Kind != placement.Shard || len(e.choice.Devices) != 1 {
			return nil, fmt.Errorf("sim: Slurm's backfill is modelled for single-GPU shard jobs only")
		}
		busy = append(busy, slot{at[e.choice.Node][e.choice.Devices[0]], e.d.Units, e.plan})
	}
	var holds []hold
	held := make([]bool, len(s.Nodes))
	// heldOver marks the nodes a reservation holds over some part of [from, till].
	heldOver := func(from, till int64) []bool {
		clear(held)
		for _, h := range holds {
			if h.from <= till && h.till > from {
				held[h.node] = true
			}
		}
		return held
	}
	used := make([]int64, len(flat))
	kept := queue[:0:0]
	for i, j := range queue {
		if i >= BackfillDepth {
			kept = append(kept, queue[i:]...)
			break
		}
		d := &ds[j]
		if d.GPUs != 1 || d.Kinds != placement.Shard {
			return nil, fmt.Errorf("sim: Slurm's backfill is modelled for single-GPU shard jobs only")
		}
		limit := jobs[j].planned()
		p := pick(j, now)
		// Now: the policy's choice among the nodes no reservation holds over its window.
		view := s
		if hv := heldOver(now, now+limit); slices.Contains(hv, true) {
			view = placement.NewState(s.Nodes)
			for n, h := range hv {
				if h {
					shut(view, n)
				}
			}
			view.Reindex()
		}
		if c, ok := p.Place(view, d); ok {
			if err := startJob(j, c, now); err != nil {
				return nil, err
			}
			busy = append(busy, slot{at[c.Node][c.Devices[0]], d.Units, now + limit})
			if i > 0 {
				*backfilled++
			}
			continue
		}
		kept = append(kept, j)
		// Later: at each planned end of a running job or of a reservation, the first
		// node in Slurm's order that no reservation holds over the job's window and
		// where the jobs still running leave it room.
		times := []int64{}
		for _, b := range busy {
			if b.till > now {
				times = append(times, b.till)
			}
		}
		for _, h := range holds {
			if h.till > now {
				times = append(times, h.till)
			}
		}
		slices.Sort(times)
		times = slices.Compact(times)
		order := slurmOrder(p, equal, len(s.Nodes))
	reserve:
		for _, t := range times {
			clear(used)
			for _, b := range busy {
				if b.till > t {
					used[b.dev] += b.units
				}
			}
			hv := heldOver(t, t+limit)
			for _, n := range order {
				if hv[n] || !s.NodeAdmits(n, d) {
					continue
				}
				for k := range s.Nodes[n].Devices {
					dv := &s.Nodes[n].Devices[k]
					if used[at[n][k]]+d.Units <= dv.Capacity && modelOK(dv, d) {
						holds = append(holds, slotTime(n, t, limit, resolution))
						break reserve
					}
				}
			}
		}
	}
	return kept, nil
}

// slotTime is the reservation of a job starting at t for limit, on node n, rounded to
// resolution as Slurm's _set_slot_time rounds it: the start down, the end up, and at
// least one resolution long.
func slotTime(n int, t, limit, resolution int64) hold {
	if resolution <= 0 {
		return hold{n, t, t + limit}
	}
	from := t / resolution * resolution
	till := (t + limit + resolution - 1) / resolution * resolution
	return hold{n, from, max(till, from+resolution)}
}

// slurmOrder is the order Slurm's select tries nodes in for a job placed by p: steer's
// ranking where p follows it, else slurm.conf's (equal; nil: index order).
func slurmOrder(p placement.Policy, equal []int, nodes int) []int {
	if r, ok := p.(*rankedFit); ok && r.order != nil {
		return r.order
	}
	if equal != nil {
		return equal
	}
	order := make([]int, nodes)
	for n := range order {
		order[n] = n
	}
	return order
}

// slurmFit is select/cons_tres's choice of a node for a one-node job among nodes of
// equal weight (_eval_nodes_consec in eval_nodes.c): the nodes that can take the job,
// in slurm.conf's order, form blocks of consecutive nodes; Slurm takes the block with
// the fewest free CPUs in all, and in it the node with the fewest, the first of equals.
// A best fit by CPUs, not first fit. What counts as a node's free CPUs is what the job
// could use there: the cores of the socket of a GPU that takes it, the socket with the
// most free cores, and the job gets that socket's GPU. Seen in the 24.11 lab: a first
// shard job on the empty cluster went to s3, the first node with two sockets (32 cores
// each, one L4 on each) rather than s1 (one socket of 64), and four of them in a row
// took cores 0, 32, 1, 33 and GPUs 0, 1, 0, 1.
//
// The model takes each GPU of a node to sit on a socket of its own with an equal share
// of the node's CPUs, as on the lab's nodes, and every job to take one CPU: jobs, kept
// by the replay, counts the running jobs per node and GPU (nil: the node's used CPUs
// taken as spread evenly). order nil is index order.
type slurmFit struct {
	order []int
	jobs  [][]int
}

func (slurmFit) Name() string { return "slurm" }

func (f slurmFit) Place(s *placement.State, d *placement.Demand) (placement.Choice, bool) {
	best, bestSum := placement.Choice{}, int64(-1)
	start, sum, at, least := -1, int64(0), placement.Choice{}, int64(0)
	end := func() { // the block ends: keep its node if the block is the tightest yet
		if start >= 0 && (bestSum < 0 || sum < bestSum) {
			best, bestSum = at, sum
		}
		start = -1
	}
	for k := range len(s.Nodes) {
		n := k
		if f.order != nil {
			n = f.order[k]
		}
		c, free, ok := f.socket(s, n, d)
		if !ok {
			end()
			continue
		}
		if start < 0 {
			start, sum, at, least = k, 0, c, free
		}
		sum += free
		if free < least {
			at, least = c, free
		}
	}
	end()
	return best, bestSum >= 0
}

// socket is the GPU of node n the job would get, on the socket with the most free
// cores among those whose GPU takes it, and that socket's free cores.
func (f slurmFit) socket(s *placement.State, n int, d *placement.Demand) (placement.Choice, int64, bool) {
	nd := &s.Nodes[n]
	if !s.NodeAdmits(n, d) || len(nd.Devices) == 0 {
		return placement.Choice{}, 0, false
	}
	per := nd.CPU / int64(len(nd.Devices))
	dev, most := -1, int64(0)
	for i := range nd.Devices {
		if !s.DeviceFits(n, i, d, placement.Shard) {
			continue
		}
		free := (nd.CPU - nd.UsedCPU) / int64(len(nd.Devices)) // no count: spread evenly
		if f.jobs != nil {
			free = per - int64(f.jobs[n][i])
		}
		if dev < 0 || free > most {
			dev, most = i, free
		}
	}
	if dev < 0 || most < d.CPU {
		return placement.Choice{}, 0, false
	}
	return placement.Choice{Node: n, Kind: placement.Shard, Devices: []int{dev}}, most, true
}

// modelOK reports whether d may use dv by its models (a pin is a model of one GPU).
func modelOK(dv *placement.Device, d *placement.Demand) bool {
	return len(d.Models) == 0 || slices.Contains(d.Models, dv.Model)
}
