package usage

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

func TestAccountSumsPerJobAndGPU(t *testing.T) {
	// Slurm's gpu records here: 0 GPU 0, 1 and 2 GPU 1's instances GI 1 and 2, 3 GPU 2.
	owners := map[int]Owner{1: {JobID: "5", Shards: 20}, 2: {JobID: "5", Shards: 20}, 3: {JobID: "6", GPUs: []int{1}}, 4: {JobID: "7", GPUs: []int{3}}}
	owner := func(pid int) (Owner, error) { return owners[pid], nil }
	s := Snapshot{GPUs: []GPU{
		{Index: 0, Total: 80 * gib, Procs: []Proc{{PID: 1, Used: 8 * gib, GI: NoInstance}, {PID: 2, Used: 4 * gib, GI: NoInstance}, {PID: 9, Used: gib, GI: NoInstance}}},
		{Index: 1, Total: 80 * gib, MIG: true, Instances: []Instance{{GI: 1, Total: 40 * gib}, {GI: 2, Total: 20 * gib}},
			Procs: []Proc{{PID: 3, Used: 30 * gib, GI: 1}}},
		{Index: 2, Total: 80 * gib, Procs: []Proc{{PID: 4, Used: 70 * gib, GI: NoInstance}}},
	}}
	jobs, un := Account(s, owner, gib)
	if len(jobs) != 3 || un[0] != gib {
		t.Fatalf("jobs %+v unattributed %v; want 3 jobs and 1 GiB unattributed on GPU 0", jobs, un)
	}
	want := []struct {
		id, kind    string
		alloc, used uint64
	}{{"5", KindShard, 20 * gib, 12 * gib}, {"6", KindMIG, 40 * gib, 30 * gib}, {"7", KindGPU, 80 * gib, 70 * gib}}
	for i, w := range want {
		j := jobs[i]
		if j.ID != w.id || j.Kind != w.kind || j.Alloc != w.alloc || j.Used != w.used || j.Over() {
			t.Errorf("job %d = %+v; want %+v and not over", i, j, w)
		}
	}
	if g := jobs[0].GPUs; len(g) != 1 || len(g[0].PIDs) != 2 || g[0].Used != 12*gib || g[0].Alloc != 20*gib {
		t.Errorf("job 5 per GPU = %+v; want GPU 0 with PIDs 1,2, 12 GiB used of 20 GiB", g)
	}
	if g := jobs[1].GPUs; len(g) != 1 || g[0].GPU != 1 || g[0].Alloc != 40*gib {
		t.Errorf("job 6 per GPU = %+v; want GPU 1 holding its 40 GiB instance", g)
	}
}

func TestSampleMockNode(t *testing.T) {
	srv := dgxh100.New()
	d0 := srv.Devices[0].(*server.Device)
	d0.MemoryInfo = nvml.Memory{Total: 80 * gib, Used: 30 * gib, Free: 50 * gib}
	d0.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 41, nvml.SUCCESS }
	d0.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return []nvml.ProcessInfo{{Pid: 77, UsedGpuMemory: 30 * gib, GpuInstanceId: math.MaxUint32}}, nvml.SUCCESS
	}
	s, err := Sample(srv, time.Unix(5, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GPUs) != 8 {
		t.Fatalf("%d GPUs, want 8", len(s.GPUs))
	}
	g := s.GPUs[0]
	if g.Err != nil || g.Used != 30*gib || g.TempC != 41 || len(g.Procs) != 1 || g.Procs[0].GI != NoInstance {
		t.Fatalf("GPU 0 = %+v", g)
	}
	if !math.IsNaN(g.PowerW) || !math.IsNaN(s.GPUs[1].TempC) {
		t.Fatalf("telemetry the mock does not implement must be NaN, got power %v temp %v", g.PowerW, s.GPUs[1].TempC)
	}
	d0.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST }
	s, _ = Sample(srv, time.Unix(6, 0))
	if s.GPUs[0].Err == nil || s.GPUs[1].Err != nil {
		t.Fatalf("lost GPU 0: errors %v / %v; want only GPU 0 to fail", s.GPUs[0].Err, s.GPUs[1].Err)
	}
}

func TestSampleFakeMIGNode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.json")
	os.WriteFile(path, []byte(`{"gpus":[{"model": "h100-80gb","mig":{"enabled":true,"instances":[
		{"profile":"3g.40gb","start":0},{"profile":"1g.10gb","start":6}]}}]}`), 0o644)
	src, err := nvmlsrc.Open("fake:" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	s, err := Sample(src.NVML, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	g := s.GPUs[0]
	if !g.MIG || len(g.Instances) != 2 {
		t.Fatalf("GPU 0: MIG %v, instances %+v; want MIG with 2 instances", g.MIG, g.Instances)
	}
	var sum uint64
	for _, in := range g.Instances {
		sum += in.Total
	}
	// NVML sizes: under the names' 40 + 10 GB, never zero.
	if sum == 0 || sum > 50*gib {
		t.Fatalf("instance memory %d MiB, want NVML's real sizes (0 < sum <= 50 GiB)", sum>>20)
	}
	// The profile's name, by placement: the metrics' GPU_I_PROFILE.
	if g.Instances[0].Profile != "3g.40gb" || g.Instances[1].Profile != "1g.10gb" {
		t.Fatalf("instance profiles %q, %q; want 3g.40gb, 1g.10gb", g.Instances[0].Profile, g.Instances[1].Profile)
	}
}

// TestAllocationIsWhatSlurmGave: with ConstrainDevices off a job's processes can reach
// any GPU. A whole-GPU or MIG job is held to the devices Slurm gave it (gpu GRES
// indices, gres.conf order), not to whatever its processes touch.
func TestAllocationIsWhatSlurmGave(t *testing.T) {
	s := Snapshot{GPUs: []GPU{
		{Index: 0, Total: 80 * gib, Procs: []Proc{{PID: 1, Used: 70 * gib, GI: NoInstance}}},
		{Index: 1, Total: 80 * gib, MIG: true, Instances: []Instance{{GI: 2, Total: 20 * gib, Start: 4}, {GI: 1, Total: 40 * gib, Start: 0}},
			Procs: []Proc{{PID: 3, Used: 30 * gib, GI: 1}}},
		{Index: 2, Total: 80 * gib, Procs: []Proc{{PID: 4, Used: 10 * gib, GI: NoInstance}}},
		{Index: 3, Total: 80 * gib},
	}}
	// Records: 0 GPU 0, 1 GPU 1 GI 1 (placement 0), 2 GPU 1 GI 2 (placement 4), 3 GPU 2, 4 GPU 3.
	owners := map[int]Owner{
		1: {JobID: "7", GPUs: []int{3}}, // given GPU 2, runs on GPU 0 too
		4: {JobID: "7", GPUs: []int{3}}, // its own GPU
		3: {JobID: "8", GPUs: []int{2}}, // given GI 2 (20 GiB), runs on GI 1
	}
	owner := func(pid int) (Owner, error) { return owners[pid], nil }
	jobs, un := Account(s, owner, gib)
	if len(jobs) != 2 || len(un) != 0 {
		t.Fatalf("jobs %+v unattributed %v; want jobs 7 and 8", jobs, un)
	}
	j7, j8 := jobs[0], jobs[1]
	if j7.Kind != KindGPU || j7.Alloc != 80*gib || j7.Used != 10*gib || j7.Stray != 70*gib || !j7.Over() {
		t.Errorf("job 7 = %+v; want GPU 2's 80 GiB given, 10 GiB used there, GPU 0's 70 GiB stray, over", j7)
	}
	if j8.Kind != KindMIG || j8.Alloc != 20*gib || j8.Used != 0 || j8.Stray != 30*gib || !j8.Over() {
		t.Errorf("job 8 = %+v; want its 20 GiB instance given, the 30 GiB on GI 1 stray, over", j8)
	}
	// Two GPUs given, one touched: both count as given, and using one is not over.
	owners = map[int]Owner{4: {JobID: "9", GPUs: []int{3, 4}}}
	jobs, _ = Account(s, owner, gib)
	if len(jobs) != 1 || jobs[0].Alloc != 160*gib || jobs[0].Over() || len(jobs[0].GPUs) != 2 {
		t.Errorf("job 9 = %+v; want 160 GiB given over GPUs 2 and 3, not over", jobs)
	}
	// Slurm said only how many (squeue): the first device touched is the job's, the
	// second is stray.
	owners = map[int]Owner{1: {JobID: "10", GPUCount: 1}, 4: {JobID: "10", GPUCount: 1}}
	jobs, _ = Account(s, owner, gib)
	if len(jobs) != 1 || jobs[0].Alloc != 80*gib || jobs[0].Used != 70*gib || jobs[0].Stray != 10*gib {
		t.Errorf("job 10 = %+v; want one GPU given (GPU 0, touched first), GPU 2's 10 GiB stray", jobs)
	}
}

// TestNotAvailableIsNoSize: NVML reports VALUE_NOT_AVAILABLE (all ones, 16 EiB read
// as a size) for a process whose memory it cannot see. It is a process of unknown
// size, not 16 EiB of use, and no policy kills for it; neither for a size past the
// GPU's total.
func TestNotAvailableIsNoSize(t *testing.T) {
	srv := dgxh100.New()
	d0 := srv.Devices[0].(*server.Device)
	d0.MemoryInfo = nvml.Memory{Total: 80 * gib, Used: 30 * gib, Free: 50 * gib}
	d0.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return []nvml.ProcessInfo{
			{Pid: 77, UsedGpuMemory: math.MaxUint64, GpuInstanceId: math.MaxUint32},
			{Pid: 78, UsedGpuMemory: 81 * gib, GpuInstanceId: math.MaxUint32},
			{Pid: 79, UsedGpuMemory: 2 * gib, GpuInstanceId: math.MaxUint32},
		}, nvml.SUCCESS
	}
	s, err := Sample(srv, time.Unix(5, 0))
	if err != nil {
		t.Fatal(err)
	}
	p := s.GPUs[0].Procs
	if len(p) != 3 || !p[0].Unknown || p[0].Used != 0 || !p[1].Unknown || p[1].Used != 0 || p[2].Unknown || p[2].Used != 2*gib {
		t.Fatalf("processes %+v; want 77 and 78 of unknown size, 79 with 2 GiB", p)
	}
	owner := func(int) (Owner, error) { return Owner{JobID: "5", Shards: 4}, nil }
	a := Measure(s, owner, gib)
	if len(a.Jobs) != 1 || a.Jobs[0].Used != 2*gib || a.Jobs[0].UnknownSize != 2 || a.Jobs[0].Over() || len(a.UnknownProcs) != 2 {
		t.Fatalf("accounting %+v; want job 5 with 2 GiB known, 2 processes of unknown size, not over", a)
	}
	// A snapshot built elsewhere with the raw value is read the same way.
	raw := Snapshot{GPUs: []GPU{{Index: 0, Total: 80 * gib, Procs: []Proc{{PID: 77, Used: math.MaxUint64, GI: NoInstance}}}}}
	e := &Enforcer{UsagePolicy: PolicyKill}
	jobs, _ := Account(raw, owner, gib)
	if len(jobs) != 1 || jobs[0].Used != 0 || jobs[0].Over() || len(e.Step(jobs, time.Unix(0, 0))) != 0 {
		t.Errorf("raw not-available value: jobs %+v; want no use and no action", jobs)
	}
}
