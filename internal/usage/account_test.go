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
	owners := map[int]Owner{1: {JobID: "5", Shards: 20}, 2: {JobID: "5", Shards: 20}, 3: {JobID: "6"}, 4: {JobID: "7"}}
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
	os.WriteFile(path, []byte(`{"gpus":[{"model":"h100","mig":{"enabled":true,"instances":[
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
}
