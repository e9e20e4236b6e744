package sim

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

// TestBackfillReservesForEveryJob: Slurm's backfill holds a reservation for every
// queued job it looks at, the simulator's own for the head only. Two GPUs of 10
// shards, a and b, first fit:
//
//	t0  A (10, runs 10) on a; X (6, runs 15) on b.
//	t1  B (10, runs 10) fits nowhere: the head, reserved on a at 10.
//	t2  D (6, runs 10) fits nowhere now; Slurm reserves it on b at 15, when X ends.
//	t3  C (4, runs 50) fits b now, beside X. The simulator starts it (it does not
//	    delay B). Slurm does not: over its run b would hold X, then D's reservation.
//	t10 A ends, B starts. t15 X ends: D starts on b, then C beside it.
//
// Slurm's way: waits 0, 0, 9, 13, 12. The simulator's: C waits 0, D 13 all the same.
func TestBackfillReservesForEveryJob(t *testing.T) {
	nodes := []placement.Node{
		{Name: "a", Devices: []placement.Device{{Capacity: 10, Shareable: true}}},
		{Name: "b", Devices: []placement.Device{{Capacity: 10, Shareable: true}}},
	}
	job := func(name string, submit, dur, shards int64) Job {
		return Job{Pod: trace.Pod{Name: name, NumGPU: 1, GPUMilli: shards}, Submit: submit, Duration: dur}
	}
	jobs := []Job{job("A", 0, 10, 10), job("X", 0, 15, 6), job("B", 1, 10, 10), job("D", 2, 10, 6), job("C", 3, 50, 4)}
	for _, tc := range []struct {
		name  string
		o     replayOpts
		waits []float64
	}{
		{"the simulator's", replayOpts{}, []float64{0, 0, 9, 13, 0}},
		{"Slurm's", replayOpts{backfillEvery: 1}, []float64{0, 0, 9, 13, 12}},
	} {
		r, err := replayQueue(nodes, jobs, placement.FirstFit{}, tc.o, 1, 2)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(r.JobWaits, tc.waits) {
			t.Errorf("%s backfill: waits %v; want %v", tc.name, r.JobWaits, tc.waits)
		}
	}
}

// TestBackfillHoldsTheWholeNode: a backfill reservation holds its job's whole node, as
// Slurm's map of the future is a bitmap of nodes, not a count of shards. Node a has two
// GPUs of 10 shards, node b one; first fit:
//
//	t0  A (10, runs 10) on a's first GPU, B (6, runs 30) on its second, C (10, runs 30)
//	    on b.
//	t1  D (10, runs 10) fits nowhere: reserved on a from 10, when A ends, to 20.
//	t2  E (4, runs 20) fits a's second GPU now, beside B. Its run would overlap D's
//	    reservation of a, so backfill leaves it; held per GPU it would start (D's shards
//	    are on the other GPU).
//	t10 A ends: the main scheduler starts D, then E, which it may: only backfill keeps
//	    to reservations.
func TestBackfillHoldsTheWholeNode(t *testing.T) {
	nodes := []placement.Node{
		{Name: "a", Devices: []placement.Device{{GPU: 0, Capacity: 10, Shareable: true}, {GPU: 1, Capacity: 10, Shareable: true}}},
		{Name: "b", Devices: []placement.Device{{Capacity: 10, Shareable: true}}},
	}
	job := func(name string, submit, dur, shards int64) Job {
		return Job{Pod: trace.Pod{Name: name, NumGPU: 1, GPUMilli: shards}, Submit: submit, Duration: dur}
	}
	jobs := []Job{job("A", 0, 10, 10), job("B", 0, 30, 6), job("C", 0, 30, 10), job("D", 1, 10, 10), job("E", 2, 20, 4)}
	r, err := replayQueue(nodes, jobs, placement.FirstFit{}, replayOpts{backfillEvery: 1}, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{0, 0, 0, 9, 8}; !reflect.DeepEqual(r.JobWaits, want) {
		t.Errorf("waits %v; want %v", r.JobWaits, want)
	}
}

// TestSlurmMainPassesAPin: the main scheduler ends its pass at the first job that does
// not fit, unless that job is pinned (has a required node): then it only takes the
// node out of the pass. Node a has a full GPU and an empty one, node b an empty one.
func TestSlurmMainPassesAPin(t *testing.T) {
	s := placement.NewState([]placement.Node{
		{Name: "a", Devices: []placement.Device{{GPU: 0, Model: "a_g0", Capacity: 10, Used: 10, Shareable: true}, {GPU: 1, Model: "a_g1", Capacity: 10, Shareable: true}}},
		{Name: "b", Devices: []placement.Device{{Model: "b_g0", Capacity: 10, Shareable: true}}},
	})
	d := func(units int64, models ...string) placement.Demand {
		return placement.Demand{GPUs: 1, Units: units, Kinds: placement.Shard, Models: models}
	}
	// P is pinned to a's full GPU; Q fits a's second GPU, but a is out of the pass, so
	// b; R fits nowhere left and ends the pass; S would fit but comes after R.
	ds := []placement.Demand{d(5, "a_g0"), d(5), d(8), d(1)}
	for _, tc := range []struct {
		name    string
		pinned  int // the node P is pinned to; -1: P is not a pin
		started map[int]string
		kept    []int
	}{
		{"P pinned", 0, map[int]string{1: "b"}, []int{0, 2, 3}},
		{"P not pinned", -1, map[int]string{}, []int{0, 1, 2, 3}},
	} {
		st := s.Clone()
		started := map[int]string{}
		start := func(j int, c placement.Choice, _ int64) error {
			started[j] = st.Nodes[c.Node].Name
			return st.Commit(c, &ds[j])
		}
		pinnedTo := func(j int) int {
			if j == 0 {
				return tc.pinned
			}
			return -1
		}
		pick := func(int, int64) placement.Policy { return placement.FirstFit{} }
		kept, err := slurmMain(st, pick, ds, []int{0, 1, 2, 3}, 0, pinnedTo, start)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(started, tc.started) || !reflect.DeepEqual(kept, tc.kept) {
			t.Errorf("%s: started %v, kept %v; want %v, %v", tc.name, started, kept, tc.started, tc.kept)
		}
	}
}

// TestSlurmFitTakesTheTightestBlock: among nodes of equal weight Slurm takes the block
// of consecutive nodes that can take the job with the fewest free CPUs in all, and in
// it the node with the fewest; first fit would take n0 every time. Six nodes, one GPU
// of 10 shards and 8 CPUs each; a full GPU is a node that cannot take the job and so
// ends a block.
func TestSlurmFitTakesTheTightestBlock(t *testing.T) {
	node := func(name string, usedCPU, usedShards int64) placement.Node {
		return placement.Node{Name: name, CPU: 8, UsedCPU: usedCPU, Devices: []placement.Device{{Capacity: 10, Used: usedShards, Shareable: true}}}
	}
	d := placement.Demand{CPU: 1, GPUs: 1, Units: 5, Kinds: placement.Shard}
	for _, tc := range []struct {
		name  string
		full  []int // nodes whose GPU is full
		order []int
		want  string
	}{
		{"blocks n0-n1 (9 free CPUs), n3 (2), n5 (7)", []int{2, 4}, nil, "n3"},
		{"blocks n0-n1 (9), n5 (7)", []int{2, 3, 4}, nil, "n5"},
		{"block n0-n1: its fuller node", []int{2, 3, 4, 5}, nil, "n1"},
		{"slurm.conf's order makes n5 n0 one block (16), n3 (2)", []int{2, 4}, []int{5, 0, 1, 2, 3, 4}, "n3"},
		{"... and n5 n0 n1 one block (16) against n3 n4 (10)", []int{2}, []int{5, 0, 1, 2, 3, 4}, "n3"},
	} {
		nodes := []placement.Node{node("n0", 2, 0), node("n1", 5, 0), node("n2", 0, 0), node("n3", 6, 0), node("n4", 0, 0), node("n5", 1, 0)}
		for _, n := range tc.full {
			nodes[n].Devices[0].Used = 10
		}
		s := placement.NewState(nodes)
		c, ok := slurmFit{order: tc.order}.Place(s, &d)
		if !ok || s.Nodes[c.Node].Name != tc.want {
			t.Errorf("%s: placed on %s (%v); want %s", tc.name, s.Nodes[c.Node].Name, ok, tc.want)
		}
	}
}

// TestNaturalOrder: slurm.conf lists s2 before s10; the GPU report sorts them as text.
func TestNaturalOrder(t *testing.T) {
	var nodes []placement.Node
	for _, n := range []string{"s1", "s10", "s11", "s2", "s3", "gpu1", "s20"} {
		nodes = append(nodes, placement.Node{Name: n})
	}
	if got, want := naturalOrder(nodes), []int{5, 0, 3, 4, 1, 2, 6}; !reflect.DeepEqual(got, want) {
		t.Errorf("order %v; want %v", got, want)
	}
}

// TestSlurmFitFollowsTheSocket: what a job can use on a node is one socket's cores, so
// an empty node of two sockets (an L4 on each, 32 cores) is a tighter fit than an empty
// one of one socket of 64 (an H100), and the job gets the GPU of the socket with the
// most free cores: the lab's Slurm put four jobs on s3's GPUs 0, 1, 0, 1.
func TestSlurmFitFollowsTheSocket(t *testing.T) {
	nodes := []placement.Node{
		{Name: "s1", CPU: 64, Devices: []placement.Device{{Capacity: 80, Shareable: true}}},
		{Name: "s3", CPU: 64, Devices: []placement.Device{{GPU: 0, Capacity: 22, Shareable: true}, {GPU: 1, Capacity: 22, Shareable: true}}},
	}
	s := placement.NewState(nodes)
	d := placement.Demand{CPU: 1, GPUs: 1, Units: 5, Kinds: placement.Shard}
	for _, tc := range []struct {
		jobs [][]int
		gpu  int
	}{
		{[][]int{{0}, {0, 0}}, 0},
		{[][]int{{0}, {1, 0}}, 1},
		{[][]int{{0}, {1, 1}}, 0},
	} {
		c, ok := slurmFit{jobs: tc.jobs}.Place(s, &d)
		if !ok || s.Nodes[c.Node].Name != "s3" || c.Devices[0] != tc.gpu {
			t.Errorf("jobs %v: placed on %s GPU %v (%v); want s3 GPU %d", tc.jobs, s.Nodes[c.Node].Name, c.Devices, ok, tc.gpu)
		}
		// Under steer's weights the node is the ranking's, the GPU still the socket's.
		c, ok = (&rankedFit{order: []int{1, 0}, equal: slurmFit{jobs: tc.jobs}}).Place(s, &d)
		if !ok || s.Nodes[c.Node].Name != "s3" || c.Devices[0] != tc.gpu {
			t.Errorf("ranked, jobs %v: placed on %s GPU %v (%v); want s3 GPU %d", tc.jobs, s.Nodes[c.Node].Name, c.Devices, ok, tc.gpu)
		}
	}
}

// TestSubmissionWaitsForTheScheduler: sbatch never starts a job; it asks for the main
// scheduler, which runs on such asks at most every batch_sched_delay (30 here), while a
// job's end runs it at once; backfill passes every 10. One GPU of 12 shards:
//
//	t0  A (6, runs 25): the first ask, served at once.
//	t5  B (4): asked within 30 of the last batch, so it waits for the pass at 10.
//	t12 C (6) fits nowhere; A's end at 25 runs the main scheduler, which starts it.
//	t32 D (2, runs 5): 32 after the last batch, served at once.
//	t41 E (2): 9 after it; waits for the pass at 50.
//
// With no delay every job that fits starts as it comes.
func TestSubmissionWaitsForTheScheduler(t *testing.T) {
	nodes := []placement.Node{{Name: "a", Devices: []placement.Device{{Capacity: 12, Shareable: true}}}}
	job := func(name string, submit, dur, shards int64) Job {
		return Job{Pod: trace.Pod{Name: name, NumGPU: 1, GPUMilli: shards}, Submit: submit, Duration: dur}
	}
	jobs := []Job{job("A", 0, 25, 6), job("B", 5, 100, 4), job("C", 12, 100, 6), job("D", 32, 5, 2), job("E", 41, 10, 2)}
	for _, tc := range []struct {
		delay int64
		waits []float64
	}{
		{30, []float64{0, 5, 13, 0, 9}},
		{0, []float64{0, 0, 13, 0, 0}},
	} {
		r, err := replayQueue(nodes, jobs, placement.FirstFit{}, replayOpts{backfillEvery: 10, batchDelay: tc.delay}, 1, 2)
		if err != nil {
			t.Fatalf("batch delay %d: %v", tc.delay, err)
		}
		if !reflect.DeepEqual(r.JobWaits, tc.waits) {
			t.Errorf("batch delay %d: waits %v; want %v", tc.delay, r.JobWaits, tc.waits)
		}
	}
}

// TestReplayStreamSlurmRefusesBadScheduling: each of Slurm's settings out of range is
// refused by name, with what would be accepted.
func TestReplayStreamSlurmRefusesBadScheduling(t *testing.T) {
	gpus := []LabGPU{{Node: "a", Shards: 10}}
	stream := []StreamJob{{Offset: 0, Shards: 4, Seconds: 5}}
	good := SlurmSched{Backfill: time.Second, Resolution: time.Minute, CPUs: 64, BatchDelay: 3 * time.Second}
	if _, err := ReplayStreamSlurm(gpus, stream, nil, nil, good); err != nil {
		t.Fatalf("%+v: %v", good, err)
	}
	for _, tc := range []struct {
		bad  func(*SlurmSched)
		word string
	}{
		{func(s *SlurmSched) { s.Backfill = 0 }, "positive interval"},
		{func(s *SlurmSched) { s.Resolution = -time.Second }, "resolution not negative"},
		{func(s *SlurmSched) { s.CPUs = 0 }, "CPUs"},
		{func(s *SlurmSched) { s.BatchDelay = -time.Second }, "batch delay not negative"},
	} {
		sc := good
		tc.bad(&sc)
		if _, err := ReplayStreamSlurm(gpus, stream, nil, nil, sc); err == nil || !strings.Contains(err.Error(), tc.word) {
			t.Errorf("%+v: error %v; want one saying %q", sc, err, tc.word)
		}
	}
}
