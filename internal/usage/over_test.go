package usage

import "testing"

// TestOverIsStrictlyMoreThanTheSlice: a job using exactly what it was given (its shards
// x the unit, its whole MIG instance, its whole GPU) is within its slice, and one byte
// more is over it. The boundary decides who the over-slice policy may signal or kill.
func TestOverIsStrictlyMoreThanTheSlice(t *testing.T) {
	// GPUs are gres.conf indices: GPU 0 is 0, GPU 1's one MIG instance 1, GPU 2 is 2.
	owners := map[int]Owner{1: {JobID: "5", Shards: 20}, 2: {JobID: "6", Shards: 10}, 3: {JobID: "7", GPUs: []int{1}}, 4: {JobID: "8", GPUs: []int{2}}}
	owner := func(pid int) (Owner, error) { return owners[pid], nil }
	s := Snapshot{GPUs: []GPU{
		{Index: 0, Total: 80 * gib, Procs: []Proc{{PID: 1, Used: 20 * gib, GI: NoInstance}, {PID: 2, Used: 10*gib + 1, GI: NoInstance}}},
		{Index: 1, Total: 80 * gib, MIG: true, Instances: []Instance{{GI: 1, Total: 40 * gib}}, Procs: []Proc{{PID: 3, Used: 40 * gib, GI: 1}}},
		{Index: 2, Total: 80 * gib, Procs: []Proc{{PID: 4, Used: 80 * gib, GI: NoInstance}}},
	}}
	jobs, _ := Account(s, owner, gib)
	want := map[string]bool{"5": false, "6": true, "7": false, "8": false}
	if len(jobs) != len(want) {
		t.Fatalf("jobs %+v; want %d", jobs, len(want))
	}
	for _, j := range jobs {
		if j.Over() != want[j.ID] {
			t.Errorf("job %s (%s) uses %d of %d bytes: over %v, want %v", j.ID, j.Kind, j.Used, j.Alloc, j.Over(), want[j.ID])
		}
	}
}
