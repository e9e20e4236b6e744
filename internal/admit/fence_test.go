package admit

import (
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
)

// fenceCluster has one partition per kind of node a fence policy meets:
//
//	fenced:  f1, two shared H100s with driver limits
//	mps:     p1, one shared H100 fenced by MPS
//	open:    o1, two shared H100s without a fence (fence unset, as in a version 1 file)
//	mixed:   x1, a shared H100 with a driver fence beside one without
//	smallopen: s1, a fenced H100 beside an unfenced L4 (too small for big slices)
//	mig:     m1, an H100 in MIG mode
//	whole:   w1, whole H200s (never sliced)
//	gpu:     f1 and o1 together
//	a100:    a1 (shared 80 GB A100) and a2 (shared 40 GB A100), both unfenced and typed
//	         a100, so no whole a100 holds 50g for sure
func fenceCluster() inventory.Cluster {
	h100 := func(fence string, i int) inventory.GPU {
		return inventory.GPU{Index: i, Minor: i, Name: "NVIDIA H100 80GB HBM3", Type: "h100", MemoryMiB: 81559, Fence: fence}
	}
	l4 := inventory.GPU{Index: 1, Minor: 1, Name: "NVIDIA L4", Type: "l4", MemoryMiB: 23034, Fence: inventory.FenceNone}
	mig := inventory.GPU{Name: "NVIDIA H100 80GB HBM3", Type: "h100", MemoryMiB: 81559, MIG: true, Instances: []inventory.MIGInstance{
		{Profile: "3g.40gb", MemoryMiB: 40448, Start: 4, Slices: 3},
		{Profile: "2g.20gb", MemoryMiB: 20096, Start: 0, Slices: 2},
	}}
	a100 := func(mib int64) inventory.GPU {
		return inventory.GPU{Name: "NVIDIA A100", Type: "a100", MemoryMiB: mib}
	}
	return inventory.Cluster{Nodes: []inventory.Node{
		{Name: "f1", Partitions: []string{"fenced", "gpu"}, Features: []string{"fence"}, GPUs: []inventory.GPU{h100(inventory.FenceDriver, 0), h100(inventory.FenceDriver, 1)}},
		{Name: "p1", Partitions: []string{"mps"}, GPUs: []inventory.GPU{h100(inventory.FenceMPS, 0)}},
		{Name: "o1", Partitions: []string{"open", "gpu"}, GPUs: []inventory.GPU{h100("", 0), h100(inventory.FenceNone, 1)}},
		{Name: "x1", Partitions: []string{"mixed"}, GPUs: []inventory.GPU{h100(inventory.FenceDriver, 0), h100(inventory.FenceNone, 1)}},
		{Name: "s1", Partitions: []string{"smallopen"}, GPUs: []inventory.GPU{h100(inventory.FenceDriver, 0), l4}},
		{Name: "m1", Partitions: []string{"mig"}, GPUs: []inventory.GPU{mig}},
		{Name: "w1", Partitions: []string{"whole"}, GPUs: gpus(2, "NVIDIA H200", "h200", 143771, inventory.SharingWhole)},
		{Name: "a1", Partitions: []string{"a100"}, GPUs: []inventory.GPU{a100(81920)}},
		{Name: "a2", Partitions: []string{"a100"}, GPUs: []inventory.GPU{a100(40960)}},
	}}
}

func fenceAdmitter(t *testing.T, fence string) *Admitter {
	t.Helper()
	a, err := New(fenceCluster(), nil, Options{Fence: fence})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Each policy on each kind of node: what gpu:mem:20g (and, where the size matters,
// 30g or 10g) becomes.
func TestFencePolicyByNodeKind(t *testing.T) {
	type c struct{ part, size, off, prefer, require string }
	cases := []c{
		{"fenced", "20g", "shard:20", "shard:20", "shard:20"},
		{"mps", "20g", "shard:20", "shard:20", "shard:20"},
		{"open", "20g", "shard:20", "shard:20", "gpu:h100:1"},
		{"mixed", "20g", "shard:20", "shard:20", "gpu:h100:1"},
		// The unfenced L4 cannot take 30 shards, so Slurm can only use the fenced H100;
		// 10 it can, so the slice could land on it.
		{"smallopen", "30g", "shard:30", "shard:30", "shard:30"},
		{"smallopen", "10g", "shard:10", "shard:10", "gpu:l4:1"},
		{"mig", "20g", "gpu:3g.40gb:1", "gpu:3g.40gb:1", "gpu:3g.40gb:1"},
		{"mig", "19g", "gpu:2g.20gb:1", "gpu:2g.20gb:1", "gpu:2g.20gb:1"},
		{"whole", "20g", "gpu:h200:1", "gpu:h200:1", "gpu:h200:1"},
		{"gpu", "20g", "shard:20", "shard:20", "gpu:h100:1"},
	}
	for _, fence := range []string{FenceOff, FencePrefer, FenceRequire} {
		a := fenceAdmitter(t, fence)
		for _, k := range cases {
			want := map[string]string{FenceOff: k.off, FencePrefer: k.prefer, FenceRequire: k.require}[fence]
			d, err := a.Admit(Job{TresPerNode: "gres:gpu:mem:" + k.size, Partitions: []string{k.part}})
			if err != nil || d.GRES != want {
				t.Errorf("Fence=%s -p %s gpu:mem:%s: got %q (%s), %v; want %s", fence, k.part, k.size, d.GRES, d.Explain, err, want)
			}
		}
	}
}

// Under prefer, a job that may use an unfenced and a fenced partition gets the fenced
// one while it has room, and both once it has none; require never offers the unfenced.
func TestFencePreferSteersToFencedPartitions(t *testing.T) {
	j := Job{TresPerNode: "gres:gpu:mem:20g", Partitions: []string{"open", "fenced"}}
	for fence, want := range map[string]string{FenceOff: "open,fenced", FencePrefer: "fenced", FenceRequire: "fenced"} {
		d, err := fenceAdmitter(t, fence).Admit(j)
		if err != nil || d.GRES != "shard:20" || strings.Join(d.Serving, ",") != want {
			t.Errorf("Fence=%s: got %s in %v (%s), %v; want shard:20 in %s", fence, d.GRES, d.Serving, d.Explain, err, want)
		}
	}
	// Fenced GPUs full: unfenced ones too, and the job starts where room comes first.
	a := fenceAdmitter(t, FencePrefer)
	use := a.NewUsage()
	use.Add("f1", 0, 70)
	use.Add("f1", 1, 70) // 9 shards left on each: no room for 20
	d, err := a.AdmitWith(j, use)
	if err != nil || d.GRES != "shard:20" || strings.Join(d.Serving, ",") != "open,fenced" {
		t.Errorf("prefer, fenced GPUs full: got %s in %v (%s), %v; want shard:20 in open,fenced", d.GRES, d.Serving, d.Explain, err)
	}
	// Require never slices the unfenced GPUs: the job takes one of them whole, which runs
	// now (the form with the most room wins, as without a fence), or waits for a fenced
	// slice where no whole GPU is free.
	r := fenceAdmitter(t, FenceRequire)
	use = r.NewUsage()
	use.Add("f1", 0, 70)
	use.Add("f1", 1, 70)
	if d, err := r.AdmitWith(j, use); err != nil || d.GRES != "gpu:h100:1" || strings.Join(d.Serving, ",") != "open,fenced" {
		t.Errorf("require, fenced GPUs full: got %s in %v (%s), %v; want gpu:h100:1 in open,fenced", d.GRES, d.Serving, d.Explain, err)
	}
	use.Add("o1", 0, 1)
	use.Add("o1", 1, 1)
	if d, err := r.AdmitWith(j, use); err != nil || d.GRES != "shard:20" || strings.Join(d.Serving, ",") != "fenced" {
		t.Errorf("require, all busy: got %s in %v (%s), %v; want shard:20 in fenced", d.GRES, d.Serving, d.Explain, err)
	}
}

// Excluded nodes and nodes without the job's features are not where Slurm puts it, so
// they do not count against the partition; a required node does not narrow it.
func TestFenceRequireCountsOnlyNodesTheJobMayUse(t *testing.T) {
	a := fenceAdmitter(t, FenceRequire)
	for _, k := range []struct {
		j    Job
		want string
	}{
		{Job{ExcNodes: "o1"}, "shard:20"},
		{Job{Features: "fence"}, "shard:20"},
		{Job{ReqNodes: "f1"}, "gpu:h100:1"},
		{Job{}, "gpu:h100:1"},
	} {
		k.j.TresPerNode, k.j.Partitions = "gres:gpu:mem:20g", []string{"gpu"}
		if d, err := a.Admit(k.j); err != nil || d.GRES != k.want {
			t.Errorf("%+v: got %q (%s), %v; want %s", k.j, d.GRES, d.Explain, err, k.want)
		}
	}
}

// The decision's log line says which fence the slice gets, under prefer and require.
func TestFenceInTheLogLine(t *testing.T) {
	for _, k := range []struct {
		fence, part, size, want string
	}{
		{FenceRequire, "fenced", "20g", "gpu:mem:20g x1 per node -> shard:20 in fenced; fence driver"},
		{FenceRequire, "mps", "20g", "gpu:mem:20g x1 per node -> shard:20 in mps; fence mps"},
		{FenceRequire, "open", "20g", "gpu:mem:20g x1 per node -> gpu:h100:1 in open; fence whole GPU"},
		{FenceRequire, "mig", "20g", "gpu:mem:20g x1 per node -> gpu:3g.40gb:1 in mig; fence hardware"},
		{FenceRequire, "smallopen", "30g", "gpu:mem:30g x1 per node -> shard:30 in smallopen; fence driver"},
		{FencePrefer, "mixed", "20g", "gpu:mem:20g x1 per node -> shard:20 in mixed; fence none"},
		{FenceOff, "mixed", "20g", "gpu:mem:20g x1 per node -> shard:20 in mixed"},
	} {
		d, err := fenceAdmitter(t, k.fence).Admit(Job{TresPerNode: "gres:gpu:mem:" + k.size, Partitions: []string{k.part}})
		if err != nil || d.Explain != k.want {
			t.Errorf("Fence=%s -p %s: got %q, %v\nwant %q", k.fence, k.part, d.Explain, err, k.want)
		}
	}
}

// When only unfenced shards hold a request (no whole GPU of one size under its type,
// no MIG instance), require refuses it in gpumem's words and says what it would run as.
func TestFenceRequireRefusal(t *testing.T) {
	j := Job{TresPerNode: "gres:gpu:mem:50g", Partitions: []string{"a100"}}
	if d, err := fenceAdmitter(t, FenceOff).Admit(j); err != nil || d.GRES != "shard:50" {
		t.Fatalf("off: got %q, %v; want shard:50", d.GRES, err)
	}
	_, err := fenceAdmitter(t, FenceRequire).Admit(j)
	want := "gpumem: you asked for --gres=gpu:mem:50g, but this site requires a memory fence for slices of shared GPUs (Fence = require), " +
		"and no GPU with a fence in partition a100 holds it as a slice, nor does a MIG instance or a whole GPU the job may use. " +
		"It would run as shard:50 in partition a100 on a GPU without a fence. " +
		"Ask for a size a MIG instance or a whole GPU holds, or ask your administrator which nodes fence GPU memory (gpumemctl inventory)"
	if err == nil || err.Error() != want {
		t.Fatalf("require:\n got %v\nwant %s", err, want)
	}
	// Too big for anything, fenced or not: the ordinary refusal, with what fits fenced.
	_, err = fenceAdmitter(t, FenceRequire).Admit(Job{TresPerNode: "gres:gpu:mem:90g", Partitions: []string{"a100"}})
	if err == nil || !strings.HasPrefix(err.Error(), "gpumem: you asked for --gres=gpu:mem:90g, but the largest GPU in partition a100 has 80 GiB") {
		t.Fatalf("require, 90g: %v", err)
	}
}

// A pending shard job moved to another partition is judged by whether it can run
// there, not by the fence: its slice was given at submit.
func TestFenceRequireHoldsIgnoresTheFence(t *testing.T) {
	if err := fenceAdmitter(t, FenceRequire).Holds(Job{TresPerNode: "gres:shard:20", Partitions: []string{"open"}}); err != nil {
		t.Fatalf("Holds: %v", err)
	}
}

func TestFenceUnknownPolicy(t *testing.T) {
	_, err := New(fenceCluster(), nil, Options{Fence: "strict"})
	if err == nil || err.Error() != `admit: fence policy "strict"; want off, prefer or require` {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkAdmitFence prints what a fence policy costs a decision against off, on the
// 10,000-node cluster with every other node's GPUs fenced (gpu and inference fenced,
// gpu-large and train not, all mixed): the ratios prefer/off and require/off.
func BenchmarkAdmitFence(b *testing.B) {
	c := benchCluster()
	for i := range c.Nodes {
		for g := range c.Nodes[i].GPUs {
			if i%2 == 0 {
				c.Nodes[i].GPUs[g].Fence = inventory.FenceDriver
			}
		}
	}
	jobs := benchJobs()
	var as []*Admitter
	for _, fence := range []string{FenceOff, FencePrefer, FenceRequire} {
		a, err := New(c, []string{"all"}, Options{PreferMIG: true, Fence: fence})
		if err != nil {
			b.Fatal(err)
		}
		as = append(as, a)
	}
	// Each round admits the job mix under each policy in turn, so a change of machine
	// load falls on all three alike.
	var ns [3]time.Duration
	for b.Loop() {
		for k, a := range as {
			start := time.Now()
			for _, j := range jobs {
				if _, err := a.Admit(j); err != nil {
					b.Fatal(err)
				}
			}
			ns[k] += time.Since(start)
		}
	}
	b.ReportMetric(float64(ns[1])/float64(ns[0]), "prefer/off")
	b.ReportMetric(float64(ns[2])/float64(ns[0]), "require/off")
}
