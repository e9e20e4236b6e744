package placement

import "testing"

func TestCPUPerMilli(t *testing.T) {
	// Half the tasks ask 8 CPUs and a GPU, half 4 CPUs and no GPU: 6 CPUs per half GPU.
	shapes := []Shape{{CPU: 8000, GPUs: 1, Units: 1000, Freq: 0.5}, {CPU: 4000, Freq: 0.5}}
	if got := cpuPerMilli(shapes, 1); got != 12 {
		t.Errorf("cpuPerMilli = %v, want 12 milli-CPU per milli-GPU", got)
	}
	// A share counts its part of the GPU, in milli-GPU whatever the units.
	shapes = []Shape{{CPU: 2000, GPUs: 1, Units: 1024, Freq: 1}}
	if got := cpuPerMilli(shapes, 1000.0/4096); got != 8 {
		t.Errorf("cpuPerMilli of a quarter-GPU share = %v, want 8", got)
	}
	if got := cpuPerMilli([]Shape{{CPU: 1000, Freq: 1}}, 1); got != 0 {
		t.Errorf("cpuPerMilli without GPU shapes = %v, want 0 (no key)", got)
	}
}

func TestStrandingKey(t *testing.T) {
	k := stranding{cpuPerMilli: 8, step: 250} // 8 CPUs feed one GPU
	nd := Node{CPU: 24000, Devices: []Device{{Capacity: 1000}, {Capacity: 1000}}}
	// 24 CPUs feed both GPUs; 12 left feed 1.5 of them: half a GPU stranded, 2 steps.
	if got := k.key(&nd, &Demand{CPU: 12000}, 1); got != 2 {
		t.Errorf("key of 12 CPUs, no GPU = %d, want 2", got)
	}
	// Taking a GPU with the CPU leaves one GPU and 12 CPUs: nothing stranded.
	if got := k.key(&nd, &Demand{CPU: 12000, GPUs: 1, Units: 1000, Kinds: Whole}, 1); got != 0 {
		t.Errorf("key of 12 CPUs and a GPU = %d, want 0", got)
	}
	if got := (&stranding{step: 250}).key(&nd, &Demand{CPU: 24000}, 1); got != 0 {
		t.Errorf("key with no rate = %d, want 0", got)
	}
}

// The rates demands are weighed at: the target's below scarcity 1; above it, the
// cluster's for GPU demands and q^4 times the target's for CPU-only ones.
func TestStrandingRates(t *testing.T) {
	// Two nodes of 2 GPUs and 32 CPUs, one of 64 CPUs without GPUs (not counted):
	// 16 milli-CPU per milli-GPU.
	gpus := []Device{{Capacity: 1000}, {Capacity: 1000}}
	s := NewState([]Node{{CPU: 32000, Devices: gpus}, {CPU: 32000, Devices: gpus}, {CPU: 64000}})
	for _, c := range []struct{ target, gpu, cpuOnly float64 }{
		{8, 8, 8},
		{16, 16, 16},
		{32, 16, 32 * 16}, // q = 2: 2^4
		{0, 0, 0},         // no key
	} {
		k := stranding{cpuPerMilli: c.target, step: 250}
		k.rates(s, 4)
		if k.gpuRate != c.gpu || k.cpuOnlyRate != c.cpuOnly {
			t.Errorf("target %v: rates %v (GPU) and %v (CPU-only), want %v and %v", c.target, k.gpuRate, k.cpuOnlyRate, c.gpu, c.cpuOnly)
		}
	}
	// GPU tasks that need more than the cluster's rate on their own keep their rate.
	k := stranding{cpuPerMilli: 32, step: 250}
	if k.rates(s, 24); k.gpuRate != 24 || k.cpuOnlyRate != 512 {
		t.Errorf("GPU tasks' own rate 24: rates %v and %v, want 24 and 512", k.gpuRate, k.cpuOnlyRate)
	}
	// Under scarcity 2 (rates 16 and 512): 16 CPUs on a node of 2 idle GPUs and 32
	// CPUs strand 1 GPU at 16 (4 steps), 31 milli-GPU at 512 (0 steps).
	k = stranding{cpuPerMilli: 32, step: 250}
	k.rates(s, 4)
	nd := Node{CPU: 32000, Devices: []Device{{Capacity: 1000}, {Capacity: 1000}}}
	if got := k.key(&nd, &Demand{CPU: 16000}, 1); got != 0 {
		t.Errorf("key of 16 CPUs, no GPU, under scarcity = %d, want 0", got)
	}
	// A GPU and 24 CPUs leave one GPU and 8 CPUs: half a GPU stranded at 16, 2 steps
	// (at the target's 32, 3 steps).
	if got := k.key(&nd, &Demand{CPU: 24000, GPUs: 1, Units: 1000, Kinds: Whole}, 1); got != 2 {
		t.Errorf("key of 24 CPUs and a GPU under scarcity = %d, want 2", got)
	}
}

// A node whose CPU a task would spend, leaving its GPUs unfed, loses the tie to one
// that can spare the CPU, even though it is in use and the other idle.
func TestOursSparesCPUOfGPUs(t *testing.T) {
	// The target: tasks of 8 CPUs and one GPU. Both nodes can still run one after the
	// demand below (11 and 52 CPUs left), so fragmentation scores them alike.
	target := []Shape{{CPU: 8000, GPUs: 1, Units: 1000, Freq: 1}}
	cpuOnly := Demand{CPU: 12000}
	place := func(p *Ours) int {
		gpus := func() []Device {
			return []Device{{Model: "T4", Capacity: 1000, Shareable: true}, {Model: "T4", Capacity: 1000, Shareable: true}}
		}
		s := NewState([]Node{
			{Name: "tight", CPU: 24000, Mem: 1 << 20, Devices: gpus()},
			{Name: "roomy", CPU: 64000, Mem: 1 << 20, Devices: gpus()},
		})
		first := Demand{CPU: 1000}
		if err := s.Commit(Choice{Node: 0}, &first); err != nil {
			t.Fatal(err)
		}
		p.Place(s, &Demand{CPU: 1}) // the policy sees tight put in use, as if it had chosen it
		c, ok := p.Place(s, &cpuOnly)
		if !ok {
			t.Fatalf("12 CPUs placed nowhere")
		}
		return c.Node
	}
	scanning := NewOurs(target)
	scanning.scan = true
	for _, p := range []*Ours{NewOurs(target), scanning} {
		if n := place(p); n != 1 {
			t.Errorf("scan %v: 12 CPUs went to node %d; want roomy, where they strand no GPU", p.scan, n)
		}
	}
	off := NewOurs(target)
	off.strand.cpuPerMilli = 0
	if n := place(off); n != 0 {
		t.Errorf("without the key 12 CPUs went to node %d; want tight, the node in use", n)
	}
}
