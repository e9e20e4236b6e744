package plugin

import (
	"strings"
	"testing"
)

// labMem is the memory of the lab's devices, as the inventory gives it.
func labMem(name string) (int64, bool) {
	m, ok := map[string]int64{"3g.40gb": 40448, "h100": 81559, "a100": 40960}[name]
	return m, ok
}

func TestStep(t *testing.T) {
	ok := []struct{ step, job, want string }{
		{"gres:gpu:mem:20g", "gres:shard:20", "gres:shard:20"},
		{"gres:gpu:mem:10g", "gres:shard:20", "gres:shard:10"},
		{"gres:gpu:mem:1536m", "gres:shard:20", "gres:shard:2"}, // rounded up to whole units
		{"gres/gpu:mem:20g", "gres/shard:h100:20", "gres/shard:20"},
		{"gres:gpu:mem:20g", "gres:gpu:3g.40gb:1", "gres:gpu:3g.40gb:1"},
		{"gres:gpu:2,gres:gpu:mem:20g", "gres:gpu:h100:2", "gres:gpu:h100:2"},
		{"gres:gpu:mem:20g,gres:license:1", "gres:gpu:1", "gres:license:1,gres:gpu:1"},
		{"gres:license:1", "gres:shard:20", "gres:license:1"}, // no gpu:mem: as typed
	}
	for _, c := range ok {
		got, err := Step(c.step, Fields{PerNode: c.job}, 7, 1024, labMem)
		if err != nil || got != c.want {
			t.Errorf("Step(%q, job %q) = %q, %v; want %q", c.step, c.job, got, err, c.want)
		}
	}
	bad := []struct{ step, job, err string }{
		{"gres:gpu:mem:30g", "gres:shard:20", "step asks for 30 GiB of GPU memory but job 7 holds 20 GiB (shard:20)"},
		{"gres:gpu:2,gres:gpu:mem:20g", "gres:shard:40", "job 7 holds a memory slice of one GPU (shard:40); a step cannot ask for 2 GPUs"},
		{"gres:gpu:4,gres:gpu:mem:20g", "gres:gpu:h100:2", "step asks for 4 GPUs but job 7 holds 2"},
		{"gres:gpu:mem:20g", "", `job 7 holds no GPU memory to give this step (its GRES: ""); ask for --gres=gpu:mem:SIZE when you submit the job`},
		{"gres:gpu:mem:abc", "gres:shard:20", `entry "gres:gpu:mem:abc" has a bad size`},
		// MIG and whole-GPU jobs: the step's size against the device's real memory.
		{"gres:gpu:mem:900g", "gres:gpu:3g.40gb:1", "step asks for 900 GiB of GPU memory per GPU but job 7 holds 39.5 GiB per GPU (gpu:3g.40gb:1)"},
		{"gres:gpu:mem:200g", "gres:gpu:h100:1", "step asks for 200 GiB of GPU memory per GPU but job 7 holds 79.6 GiB per GPU (gpu:h100:1)"},
		{"gres:gpu:2,gres:gpu:mem:80g", "gres:gpu:h100:2", "holds 79.6 GiB per GPU (gpu:h100:2)"},
	}
	// --gpus=2 with gpu:mem puts whole GPUs in tres_per_job.
	if got, err := Step("gres:gpu:mem:20g", Fields{PerNode: "gres:license:1", PerJob: "gres:gpu:a100:2"}, 7, 1024, labMem); err != nil || got != "gres:gpu:a100:1" {
		t.Errorf("step of a --gpus job: %q, %v; want gres:gpu:a100:1", got, err)
	}
	for _, c := range bad {
		got, err := Step(c.step, Fields{PerNode: c.job}, 7, 1024, labMem)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Step(%q, job %q) = %q, %v; want error with %q", c.step, c.job, got, err, c.err)
		}
	}
}
