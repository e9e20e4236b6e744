package sim

import (
	"fmt"
	"slices"

	"github.com/gpumem/gpumem/internal/placement"
)

// slot is a device's shards held over a time: a running job until its planned end, or
// a queued job's reservation.
type slot struct {
	dev        int // flat device index
	units      int64
	from, till int64
	res        bool // a reservation, not a job running
}

// backfillAll is Slurm's backfill as the lab runs it (sched/backfill every bf_interval,
// with the main scheduler in between starting the queue only in order): each queued
// job in order, up to BackfillDepth, either starts now where it delays no job ahead of
// it, or gets a reservation at its earliest start, which the jobs behind it must leave
// free. schedule protects the head only; Slurm protects every job it has looked at.
//
// A device's use over a job's planned window [T, T+limit) is the running jobs still
// planned to run at T plus every reservation overlapping the window (their sum, which
// overstates it where two reservations do not overlap each other). A job starting now
// is placed by its policy on the state with the reservations of its window added; a
// reservation goes to the first device in node order with room, as Slurm's select
// plugin takes the first nodes that fit. Single-GPU shard jobs only (the streams).
func backfillAll(s *placement.State, pick func(j int, now int64) placement.Policy, ds []placement.Demand, jobs []Job, queue []int, run endHeap, now int64,
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
		busy = append(busy, slot{at[e.choice.Node][e.choice.Devices[0]], e.d.Units, now, e.plan, false})
	}
	reserved := make([]int64, len(flat)) // reservations over the window being tried
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
		// Now: the policy's choice on the state (the running jobs) with the
		// reservations of the window taken as well.
		clear(reserved)
		for _, b := range busy {
			if b.res && b.from < now+limit {
				reserved[b.dev] += b.units
			}
		}
		view := placement.NewState(s.Nodes)
		for k, u := range reserved {
			dv := &view.Nodes[flat[k][0]].Devices[flat[k][1]]
			dv.Used = min(dv.Used+u, dv.Capacity)
		}
		view.Reindex()
		if c, ok := pick(j, now).Place(view, d); ok {
			if err := startJob(j, c, now); err != nil {
				return nil, err
			}
			busy = append(busy, slot{at[c.Node][c.Devices[0]], d.Units, now, now + limit, false})
			if i > 0 {
				*backfilled++
			}
			continue
		}
		kept = append(kept, j)
		// Later: the first planned end after which some device holds it over its window.
		times := []int64{}
		for _, b := range busy {
			if b.till > now {
				times = append(times, b.till)
			}
		}
		slices.Sort(times)
		times = slices.Compact(times)
	reserve:
		for _, t := range times {
			clear(reserved)
			for _, b := range busy {
				if b.till > t && b.from < t+limit {
					reserved[b.dev] += b.units
				}
			}
			for k, f := range flat {
				dv := &s.Nodes[f[0]].Devices[f[1]]
				if reserved[k]+d.Units <= dv.Capacity && s.NodeAdmits(f[0], d) && modelOK(dv, d) {
					busy = append(busy, slot{k, d.Units, t, t + limit, true})
					break reserve
				}
			}
		}
	}
	return kept, nil
}

// modelOK reports whether d may use dv by its models (a pin is a model of one GPU).
func modelOK(dv *placement.Device, d *placement.Demand) bool {
	return len(d.Models) == 0 || slices.Contains(d.Models, dv.Model)
}
