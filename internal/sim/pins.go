package sim

import (
	"fmt"
	"time"

	"github.com/gpumem/gpumem/internal/placement"
)

// PinModel is how a lab pins (docs/steering.md), for a replay that does as the lab does
// rather than placing every start with the policy: gpumemctl steer writes a snapshot of
// the GPUs every Interval (running jobs, pending pinned jobs on their GPU, and the
// pending jobs Slurm will start on its own where it would start them: ClaimQueue);
// job_submit reads it up to Reload later (gpumem.conf's ReloadInterval) and places each
// new job on it, plus its own pins since the snapshot was taken, pinning the job to that
// GPU; Slurm starts a pinned job only there, and steer takes back a pin still pending
// UnpinAfter after its job's submission. A job the view shows nowhere to fit is left to
// Slurm, which places it as every unpinned job: by steer's weights where Rank is set,
// else by Slurm's own choice (slurmFit where the replay schedules as Slurm does, first
// fit otherwise).
type PinModel struct {
	Interval, Reload, UnpinAfter time.Duration
	// Rank, when set, is steer's ranking of the nodes (steer.Order on the running jobs
	// and the queue), which it hands Slurm as node weights at each snapshot: Slurm then
	// starts an unpinned job on the first node of the last ranking that takes it, and
	// the snapshot's claim of the queue guesses by that ranking. nil: equal weights,
	// Slurm's node order.
	Rank func(s *placement.State, queue []placement.Demand) []int
}

// rankedFit is Slurm's choice under node weights: the first node of order that takes
// the demand; with no order yet (weights all equal), equal's. On the node the job gets
// the GPU equal would give it there (the socket's, for slurmFit), else its first with
// room.
type rankedFit struct {
	order []int
	equal placement.Policy
}

func (r *rankedFit) Name() string { return r.equal.Name() }

func (r *rankedFit) Place(s *placement.State, d *placement.Demand) (placement.Choice, bool) {
	if r.order == nil {
		return r.equal.Place(s, d)
	}
	sf, sockets := r.equal.(slurmFit)
	for _, n := range r.order {
		if sockets {
			if c, _, ok := sf.socket(s, n, d); ok {
				return c, true
			}
		} else if c, ok := s.FirstDevices(n, d); ok {
			return c, true
		}
	}
	return placement.Choice{}, false
}

// pinning is a PinModel at work in one replay; times are the replay's (ms).
type pinning struct {
	policy               placement.Policy
	every, reload, unpin int64
	snaps                []pinSnap  // taken, oldest first; the oldest dropped once a later one is read
	pins                 []pinMade  // made since the oldest snapshot kept was taken
	pinnedOn             []int      // job -> the node it is pinned to; -1: not pinned
	slurm                *rankedFit // Slurm's choice for unpinned jobs, reranked at each snapshot when rank is set
	rank                 func(s *placement.State, queue []placement.Demand) []int
	next                 int64 // the next snapshot
	made, taken          int
}

type pinSnap struct {
	at int64
	s  *placement.State
}

type pinMade struct {
	at int64
	c  placement.Choice
	d  placement.Demand
}

func newPinning(m PinModel, p placement.Policy, slurm *rankedFit, jobs int, empty *placement.State, first int64) (*pinning, error) {
	if m.Interval <= 0 || m.Reload < 0 || m.UnpinAfter < 0 {
		return nil, fmt.Errorf("sim: pin model %+v: want a positive interval, and reload and unpin-after not negative", m)
	}
	pn := &pinning{policy: p, every: m.Interval.Milliseconds(), reload: m.Reload.Milliseconds(), unpin: m.UnpinAfter.Milliseconds(),
		slurm: slurm, rank: m.Rank}
	pn.every = max(pn.every, 1)
	pn.pinnedOn = make([]int, jobs)
	for i := range pn.pinnedOn {
		pn.pinnedOn[i] = -1
	}
	// steer runs before the first job: its first snapshot, of the empty cluster, is read
	// by the time the first job comes (test/steer/scale.sh waits for it).
	at := first - pn.reload
	pn.snaps = []pinSnap{{at, empty.Clone()}}
	pn.next = at + pn.every
	return pn, nil
}

// submit is job_submit for job j at now: on the snapshot it has read, plus the pins it
// made since that snapshot was taken, the policy's choice becomes the job's GPU.
func (pn *pinning) submit(j int, now int64, ds []placement.Demand) {
	for len(pn.snaps) > 1 && pn.snaps[1].at+pn.reload <= now {
		pn.snaps = pn.snaps[1:]
	}
	base := pn.snaps[0]
	if base.at+pn.reload > now {
		return // no snapshot read yet
	}
	kept := pn.pins[:0]
	for _, p := range pn.pins {
		if p.at >= base.at {
			kept = append(kept, p)
		}
	}
	pn.pins = kept
	view := base.s.Clone()
	for _, p := range pn.pins {
		_ = view.Commit(p.c, &p.d) // as the plugin: a pin its view no longer has room for is skipped
	}
	d := ds[j]
	d.Models = nil
	c, ok := pn.policy.Place(view, &d)
	if !ok || len(c.Devices) != 1 {
		return
	}
	ds[j].Models = []string{view.Nodes[c.Node].Devices[c.Devices[0]].Model}
	pn.pins = append(pn.pins, pinMade{now, c, d})
	pn.pinnedOn[j] = c.Node
	pn.made++
}

// tick is steer at now: it takes back the pins pending longer than UnpinAfter, then
// writes the snapshot.
func (pn *pinning) tick(now int64, s *placement.State, ds []placement.Demand, queue []int, submit []int64) {
	for _, j := range queue {
		if pn.pinnedOn[j] >= 0 && pn.unpin > 0 && now-submit[j] > pn.unpin {
			ds[j].Models = nil
			pn.pinnedOn[j] = -1
			pn.taken++
		}
	}
	v := s.Clone()
	// Pending pinned jobs on their GPU, then the others where Slurm puts them under the
	// weights in force, each only if it fits now (ClaimQueue).
	for _, pinned := range []bool{true, false} {
		for _, j := range queue {
			if (pn.pinnedOn[j] >= 0) != pinned {
				continue
			}
			if c, ok := pn.slurm.Place(v, &ds[j]); ok {
				_ = v.Commit(c, &ds[j])
			}
		}
	}
	pn.snaps = append(pn.snaps, pinSnap{now, v})
	pn.next = now + pn.every
	if pn.rank != nil { // then the weights, ranked on the running jobs and the queue as asked
		q := make([]placement.Demand, len(queue))
		for i, j := range queue {
			q[i] = ds[j]
			q[i].Models = nil
		}
		pn.slurm.order = pn.rank(s, q)
	}
}
