package sim

import (
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"time"

	"github.com/gpumem/gpumem/internal/placement"
)

// BackfillDepth is how many queued jobs behind the head backfill examines at each
// scheduling pass, Slurm's default bf_max_job_test (500): it bounds a pass's cost.
const BackfillDepth = 500

// QueueResult is one replay with departures: one workload, one policy, one seed.
type QueueResult struct {
	Workload, Policy string
	Seed             int64
	Jobs, Started    int
	NeverStarted     int       // fit no node even on the empty cluster
	Backfilled       int       // started ahead of a blocked head
	Pinned, Unpinned int       // pins made and taken back (ReplayStreamPinned only)
	MeanWait, P95    float64   // queue wait of started jobs, seconds
	JobWaits         []float64 // each job's wait, by its index; -1 for one never started
	MeanAlloc        float64   // allocated GPU % averaged over the submission span
	Curve            []float64
	Span             int64 // seconds from the first to the last submission
	Wall             time.Duration
}

// running is a started job: when it ends and where it sits.
type running struct {
	end    int64
	plan   int64 // when backfill expects it to end (start plus its Job.Limit)
	job    int
	d      *placement.Demand
	choice placement.Choice
}

type endHeap []running

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(i, j int) bool {
	return h[i].end < h[j].end || h[i].end == h[j].end && h[i].job < h[j].job
}
func (h endHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)   { *h = append(*h, x.(running)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ReplayQueue replays jobs with their own submission and run times: a job starts when
// the policy places it; otherwise it waits in a FIFO queue. Scheduling is Slurm's
// default, FIFO with backfill: at every submission and end, the queue is started in
// order until its head does not fit; then each of the next BackfillDepth jobs may start
// now if the policy places it and it does not delay the head's earliest start, computed
// from the running jobs' known ends (the first end after which some node takes the
// head): either it ends by then, or it fits beside the head's reservation at that time
// as well. One reservation, for the head; a backfill candidate is tried where the
// policy places it only. A job that fits no node of the empty cluster is never started
// (Slurm refuses it at submission) and holds nothing up. load divides the submission
// times (2 = arrivals twice as dense), run times kept. points is the number of
// allocation samples, evenly over the submission span.
func ReplayQueue(nodes []placement.Node, jobs []Job, p placement.Policy, load float64, points int) (QueueResult, error) {
	return replayQueue(nodes, jobs, p, replayOpts{}, load, points)
}

// replayOpts are a replay's ways of standing in for pinning in a real Slurm.
type replayOpts struct {
	// queued places a job that could not start at its submission, when it does start
	// (nil: p too): job_submit pins a job that fits now, and leaves the rest to Slurm.
	queued placement.Policy
	// pin, with pinPolicy, pins as the lab does (PinModel); p is then Slurm's own choice.
	pin       *PinModel
	pinPolicy placement.Policy
	// backfillEvery, when above 0, schedules as Slurm does: the main scheduler
	// (slurmMain) at each job's end and, for submissions, at most every batchDelay
	// (at each event where batchDelay is 0), and every backfillEvery a backfill pass
	// that reserves a node for every queued job it looks at (backfillAll), its
	// reservations rounded to backfillResolution (Slurm's bf_resolution).
	backfillEvery, backfillResolution, batchDelay int64
	// slurmOrder is the order Slurm tries the nodes in (slurm.conf's), by index; nil:
	// index order. cpus, above 0, is each node's CPUs, one a job (slurmFit counts them).
	slurmOrder []int
	cpus       int64
	// jobsOn counts the running jobs on each node's each GPU, for slurmFit; the replay
	// keeps it where Slurm's way schedules.
	jobsOn [][]int
}

// slurmChoice is Slurm's own choice of node where no weights rank them: with o's
// scheduling as Slurm's, its best fit by free CPUs (slurmFit); else first fit.
func (o *replayOpts) slurmChoice() placement.Policy {
	if o.backfillEvery > 0 {
		return slurmFit{o.slurmOrder, o.jobsOn}
	}
	return placement.FirstFit{}
}

// jobsOn is a count for each GPU of nodes, all zero.
func jobsOn(nodes []placement.Node) [][]int {
	c := make([][]int, len(nodes))
	for n := range nodes {
		c[n] = make([]int, len(nodes[n].Devices))
	}
	return c
}

// count adds k to the jobs counted on c's GPUs, where they are counted.
func (o *replayOpts) count(c placement.Choice, k int) {
	if o.jobsOn == nil {
		return
	}
	for _, i := range c.Devices {
		o.jobsOn[c.Node][i] += k
	}
}

// replayQueue is ReplayQueue with o's stand-ins for pinning.
func replayQueue(nodes []placement.Node, jobs []Job, p placement.Policy, o replayOpts, load float64, points int) (QueueResult, error) {
	start := time.Now()
	r := QueueResult{Policy: p.Name(), Jobs: len(jobs)}
	if load <= 0 {
		return r, fmt.Errorf("sim: load %g, want a positive factor such as 1", load)
	}
	var capacity int64
	for _, n := range nodes {
		for _, d := range n.Devices {
			capacity += d.Capacity // 1000 milli-GPU a trace GPU; a lab's GPU holds its shards
		}
	}
	if capacity == 0 || len(jobs) == 0 {
		return r, fmt.Errorf("sim: need GPUs and at least one job")
	}
	submit := make([]int64, len(jobs))
	ds := make([]placement.Demand, len(jobs))
	order := make([]int, len(jobs))
	r.JobWaits = make([]float64, len(jobs))
	for i := range jobs {
		r.JobWaits[i] = -1
		submit[i] = int64(float64(jobs[i].Submit) / load)
		ds[i] = jobs[i].Pod.Demand()
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(submit[a], submit[b]) })
	first, last := submit[order[0]], submit[order[len(order)-1]]
	r.Span = last - first

	s := placement.NewState(nodes)
	empty := placement.NewState(nodes)
	if o.backfillEvery > 0 && o.jobsOn == nil {
		o.jobsOn = jobsOn(nodes)
	}
	var (
		run     endHeap
		queue   []int
		waits   []float64
		alloc   int64
		sampled int
		area    float64 // allocated milli-GPU x seconds over the span
		prevT   = first
	)
	r.Curve = make([]float64, 0, points)
	// advance accounts the allocation up to t, before anything changes at t.
	advance := func(t int64) {
		lo, hi := max(prevT, first), min(t, last)
		if hi > lo {
			area += float64(alloc) * float64(hi-lo)
		}
		for sampled < points && (points == 1 || first+int64(sampled)*r.Span/int64(points-1) < t) {
			r.Curve = append(r.Curve, 100*float64(alloc)/float64(capacity))
			sampled++
		}
		prevT = t
	}
	startJob := func(j int, c placement.Choice, now int64) error {
		if err := s.Commit(c, &ds[j]); err != nil {
			return fmt.Errorf("sim: %s placed job %d (%s) wrongly: %w", p.Name(), j, jobs[j].Pod.Name, err)
		}
		heap.Push(&run, running{end: now + jobs[j].Duration, plan: now + jobs[j].planned(), job: j, d: &ds[j], choice: c})
		o.count(c, 1)
		alloc += jobs[j].Pod.GPUDemand()
		waits = append(waits, float64(now-submit[j]))
		r.JobWaits[j] = float64(now - submit[j])
		return nil
	}
	var slurm *rankedFit
	if o.pin != nil {
		slurm = &rankedFit{equal: o.slurmChoice()}
		if o.pin.Rank != nil {
			p = slurm // Slurm's own choice follows steer's weights
		}
	}
	pick := func(j int, now int64) placement.Policy {
		if o.queued != nil && now > submit[j] {
			return o.queued
		}
		return p
	}
	var pins *pinning
	if o.pin != nil {
		var err error
		if pins, err = newPinning(*o.pin, o.pinPolicy, slurm, len(jobs), empty, first); err != nil {
			return r, err
		}
	}
	pinnedTo := func(j int) int {
		if pins == nil {
			return -1
		}
		return pins.pinnedOn[j]
	}
	next, prev := 0, first
	asked, lastBatch := false, int64(-1<<62) // a submission's ask for the main scheduler, not yet served
	for next < len(order) || run.Len() > 0 {
		t := int64(1<<62 - 1)
		if next < len(order) {
			t = submit[order[next]]
		}
		if run.Len() > 0 && run[0].end < t {
			t = run[0].end
		}
		if pins != nil && pins.next < t {
			t = pins.next
		}
		tick := int64(-1)
		if o.backfillEvery > 0 && len(queue) > 0 {
			tick = (prev/o.backfillEvery + 1) * o.backfillEvery
			t = min(t, tick)
		}
		prev = t
		advance(t)
		ended := false
		for run.Len() > 0 && run[0].end == t {
			ended = true
			e := heap.Pop(&run).(running)
			if err := s.Release(e.choice, e.d); err != nil {
				return r, err
			}
			o.count(e.choice, -1)
			alloc -= jobs[e.job].Pod.GPUDemand()
		}
		if pins != nil && pins.next == t {
			pins.tick(t, s, ds, queue, submit)
		}
		submitted := false
		for next < len(order) && submit[order[next]] == t {
			submitted = true
			j := order[next]
			next++
			if _, ok := (placement.FirstFit{}).Place(empty, &ds[j]); !ok {
				r.NeverStarted++
				continue
			}
			if pins != nil {
				pins.submit(j, t, ds)
			}
			queue = append(queue, j)
		}
		var err error
		switch {
		case o.backfillEvery > 0:
			main := true
			if o.batchDelay > 0 { // sbatch never starts a job itself: it asks for the main scheduler
				asked = asked || submitted
				due := asked && t-lastBatch >= o.batchDelay
				if due {
					asked, lastBatch = false, t
				}
				main = ended || due
			}
			if main {
				queue, err = slurmMain(s, pick, ds, queue, t, pinnedTo, startJob)
			}
			if err == nil && t == tick {
				queue, err = backfillAll(s, pick, ds, jobs, queue, run, t, o.backfillResolution, o.slurmOrder, startJob, &r.Backfilled)
			}
		default:
			queue, err = schedule(s, pick, ds, jobs, queue, &run, t, startJob, &r.Backfilled)
		}
		if err != nil {
			return r, err
		}
	}
	advance(last + 1)
	for len(r.Curve) < points {
		r.Curve = append(r.Curve, 100*float64(alloc)/float64(capacity))
	}
	if len(queue) > 0 {
		return r, fmt.Errorf("sim: %d jobs still queued on an empty cluster", len(queue))
	}
	r.Started = len(waits)
	if pins != nil {
		r.Pinned, r.Unpinned = pins.made, pins.taken
	}
	r.MeanWait, r.P95 = meanP95(waits)
	if r.Span > 0 {
		r.MeanAlloc = 100 * area / float64(r.Span) / float64(capacity)
	}
	r.Wall = time.Since(start)
	return r, nil
}

// schedule is one pass at time now: the queue in order while its head fits, then
// backfill behind a blocked head. It returns the queue left.
func schedule(s *placement.State, pick func(j int, now int64) placement.Policy, ds []placement.Demand, jobs []Job, queue []int, run *endHeap, now int64,
	startJob func(int, placement.Choice, int64) error, backfilled *int) ([]int, error) {
	queue, err := startInOrder(s, pick, ds, queue, now, startJob)
	if err != nil || len(queue) < 2 {
		return queue, err
	}
	var shadow *placement.State // the state when the head can start, with it reserved
	var shadowAt int64
	kept := queue[:1]
	// Within a pass the state only fills, so a shape that found no place once finds
	// none again: one look per shape, not per job.
	nowhere := map[shapeKey]bool{keyOf(&ds[queue[0]]): true}
	for i, j := range queue[1:] {
		if i >= BackfillDepth {
			kept = append(kept, queue[1+i:]...)
			break
		}
		k := keyOf(&ds[j])
		if nowhere[k] {
			kept = append(kept, j)
			continue
		}
		c, ok := pick(j, now).Place(s, &ds[j])
		if !ok {
			nowhere[k] = true
			kept = append(kept, j)
			continue
		}
		if shadow == nil {
			var err error
			if shadow, shadowAt, err = reserve(s, &ds[queue[0]], *run); err != nil {
				return nil, err
			}
		}
		if now+jobs[j].planned() > shadowAt {
			// Still running when the head starts: it must fit beside the reservation.
			if shadow.Commit(c, &ds[j]) != nil {
				kept = append(kept, j)
				continue
			}
		}
		if err := startJob(j, c, now); err != nil {
			return nil, err
		}
		*backfilled++
	}
	return kept, nil
}

// startInOrder starts the queue in order while its head fits, and returns the rest.
func startInOrder(s *placement.State, pick func(j int, now int64) placement.Policy, ds []placement.Demand, queue []int, now int64,
	startJob func(int, placement.Choice, int64) error) ([]int, error) {
	for len(queue) > 0 {
		c, ok := pick(queue[0], now).Place(s, &ds[queue[0]])
		if !ok {
			break
		}
		if err := startJob(queue[0], c, now); err != nil {
			return nil, err
		}
		queue = queue[1:]
	}
	return queue, nil
}

// reserve finds the head's earliest start: the running jobs end in order of their
// ends, and a node changes only when a job on it ends, so the head's start is the first
// end after which the node it ran on takes the head. It returns the state at that time
// (every job ending by then gone) with the head committed there.
func reserve(s *placement.State, head *placement.Demand, run endHeap) (*placement.State, int64, error) {
	// A plain copy: no index to keep up on every release (FirstDevices and Commit's
	// checks read the nodes only), and the ends popped from a heap of the planned ends
	// (heap.Init is linear), so a pass costs the jobs that end before the head starts,
	// not all running ones.
	c := placement.NewState(s.Nodes)
	ends := make(endHeap, len(run))
	for i, e := range run {
		e.end = e.plan
		ends[i] = e
	}
	heap.Init(&ends)
	pop := func() (running, error) {
		e := heap.Pop(&ends).(running)
		return e, c.Release(e.choice, e.d)
	}
	for ends.Len() > 0 {
		e, err := pop()
		if err != nil {
			return nil, 0, err
		}
		ch, ok := c.FirstDevices(e.choice.Node, head)
		if !ok {
			continue
		}
		for ends.Len() > 0 && ends[0].end == e.end {
			if _, err := pop(); err != nil {
				return nil, 0, err
			}
		}
		if err := c.Commit(ch, head); err != nil {
			return nil, 0, err
		}
		return c, e.end, nil
	}
	return nil, 0, fmt.Errorf("sim: the queue's head fits nowhere even once every running job ends")
}

// meanP95 is the mean and the 95th percentile (nearest rank) of xs; 0, 0 for none.
func meanP95(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	rank := (95*len(sorted) + 99) / 100 // ceil(0.95 n), 1-based
	return sum / float64(len(xs)), sorted[rank-1]
}
