package plugin

import (
	"errors"
	"testing"

	"github.com/gpumem/gpumem/internal/admit"
)

func TestOptionsFieldsAsTheClientBuildsThem(t *testing.T) {
	o := Options{Gres: "gres:gpu:mem:20g", GPUs: "h100:2", GPUsPerNode: "2", GPUsPerSocket: "1", GPUsPerTask: "1", Partition: "gpu"}
	want := Fields{PerNode: "gres:gpu:2,gres:gpu:mem:20g", PerJob: "gres:gpu:h100:2", PerSocket: "gres:gpu:1", PerTask: "gres:gpu:1", Partition: "gpu"}
	if got := o.Fields("gres:"); got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// The job's shape reaches the fields as job_desc would hold it, with --nodes and
// --ntasks-per-node read as slurm_option_get prints them.
func TestOptionsFieldsCarryTheJobsShape(t *testing.T) {
	base := Options{Gres: "gres:gpu:mem:20g", NodeList: "n[1-2]", Exclude: "n3", Constraint: "h100&ib", Array: "0-9%2", Reservation: "maint"}
	shape := Fields{PerNode: "gres:gpu:mem:20g", ReqNodes: "n[1-2]", ExcNodes: "n3", Features: "h100&ib", ArrayInx: "0-9%2", Reservation: "maint"}
	cases := []struct {
		nodes, tasks       string
		minN, maxN, ntasks uint32
	}{
		{"2", "4", 2, 2, 4},
		{"2-4", "", 2, 4, 0},
		{"1-0", "-2", 1, 0, 0}, // what an unset --nodes and --ntasks-per-node print
		{"", "65534", 0, 0, 0}, // NO_VAL16
		{"3-1", "x", 3, 0, 0},  // never a maximum below the minimum
		{"lots", "8", 0, 0, 8},
	}
	for _, c := range cases {
		o := base
		o.Nodes, o.NTasksPerNode = c.nodes, c.tasks
		want := shape
		want.MinNodes, want.MaxNodes, want.NTasksPerNode = c.minN, c.maxN, c.ntasks
		if got := o.Fields("gres:"); got != want {
			t.Errorf("nodes %q, ntasks-per-node %q:\n got %+v\nwant %+v", c.nodes, c.tasks, got, want)
		}
	}
}

func TestOptionsWithFields(t *testing.T) {
	shape := Options{Nodes: "2", Exclude: "n3", Array: "1-3"}
	in := shape
	in.Gres, in.GPUsPerNode = "gres:gpu:mem:20g", "2"
	got, err := in.withFields(Fields{PerNode: "gres:shard:20", PerJob: "gres/gpu:h100:2", Partition: "gpu"})
	want := shape
	want.Gres, want.GPUs, want.Partition = "gres:shard:20", "h100:2", "gpu"
	if err != nil || got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	if _, err := in.withFields(Fields{PerJob: "gres:shard:20"}); err == nil || err.Error() != `--gpus cannot say "gres:shard:20"` {
		t.Fatalf("got %v", err)
	}
}

func TestSubmitOptions(t *testing.T) {
	h := newHarness(t, "")
	h.admit = func(j admit.Job) (admit.Decision, error) {
		switch j.TresPerNode {
		case "gres:gpu:mem:20g":
			return shardCore(j)
		case "gres:gpu:2,gres:gpu:mem:40g":
			d := admit.Decision{Job: j, Changed: true}
			d.TresPerNode = "gres:gpu:h100:2"
			return d, nil
		}
		return admit.Decision{}, errors.New("you asked for 500 GiB per GPU")
	}
	p := h.plugin()
	cases := []struct {
		in, want Options
		stepOf   uint32
		jobGRES  string
		refusal  string
	}{
		{in: Options{Gres: "gres:gpu:mem:20g"}, want: Options{Gres: "gres:shard:20"}},
		{in: Options{Gres: "gres:gpu:mem:20g", Nodes: "2", Exclude: "n1"}, want: Options{Gres: "gres:shard:20", Nodes: "2", Exclude: "n1"}},
		{in: Options{Gres: "gres:gpu:mem:40g", GPUsPerNode: "2"}, want: Options{Gres: "gres:gpu:h100:2"}},
		{in: Options{Gres: "gres:gpu:mem:500g"}, want: Options{Gres: "gres:gpu:mem:500g"}, refusal: "you asked for 500 GiB per GPU"},
		{in: Options{Gres: "gres:gpu:1", GPUs: "2"}, want: Options{Gres: "gres:gpu:1", GPUs: "2"}},
		{in: Options{Gres: "gres:gpu:mem:10g"}, stepOf: 9, jobGRES: "gres:shard:20", want: Options{Gres: "gres:shard:10"}},
		{in: Options{Gres: "gres:gpu:mem:10g", GPUsPerNode: "1"}, stepOf: 9, jobGRES: "gres:gpu:2g.20gb:1", want: Options{Gres: "gres:gpu:2g.20gb:1"}},
		{in: Options{Gres: "gres:gpu:mem:30g"}, stepOf: 9, jobGRES: "gres:shard:20", want: Options{Gres: "gres:gpu:mem:30g"}, refusal: "step asks for 30 GiB of GPU memory but job 9 holds 20 GiB (shard:20)"},
	}
	for _, c := range cases {
		got, refusal := p.SubmitOptions(c.in, c.stepOf, Fields{PerNode: c.jobGRES})
		if got != c.want || refusal != c.refusal {
			t.Errorf("SubmitOptions(%+v, %d, %q) = %+v, %q; want %+v, %q", c.in, c.stepOf, c.jobGRES, got, refusal, c.want, c.refusal)
		}
	}
}

// TestHetJobComponentsInTheClient: the client decides a heterogeneous job's components
// one after the other, and a later one takes a form on a node the earlier ones leave.
func TestHetJobComponentsInTheClient(t *testing.T) {
	p := realPlugin(t, &logSink{})
	want := []string{"gres:shard:5", "gres:gpu:2g.10gb:1"}
	for i, w := range want {
		out, refusal := p.SubmitOptions(Options{Gres: "gres:gpu:mem:5g", HetOffset: uint32(i)}, 0, Fields{})
		if refusal != "" || out.Gres != w {
			t.Fatalf("component %d: %+v %q; want %s", i, out, refusal, w)
		}
	}
	// A new job starts afresh.
	if out, refusal := p.SubmitOptions(Options{Gres: "gres:gpu:mem:5g"}, 0, Fields{}); refusal != "" || out.Gres != want[0] {
		t.Fatalf("next job: %+v %q", out, refusal)
	}
}

// TestGPUOptionsInTheClient: the options that count GPUs as Slurm does reach admission
// from the client's options, and the answer is written back as options the client
// takes: --gpus-per-task with a GPU type, --gres with a whole GPU for --exclusive and
// the per-GPU options; without them the same gpu:mem is shards.
func TestGPUOptionsInTheClient(t *testing.T) {
	p := realPlugin(t, &logSink{})
	cases := []struct {
		in, want Options
		refusal  string
	}{
		{in: Options{Gres: "gres:gpu:mem:30g"}, want: Options{Gres: "gres:shard:30"}},
		{in: Options{Gres: "gres:gpu:mem:30g", Exclusive: "exclusive"}, want: Options{Gres: "gres:gpu:h100:1", Exclusive: "exclusive"}},
		{in: Options{Gres: "gres:gpu:mem:30g", Exclusive: "oversubscribe"}, want: Options{Gres: "gres:shard:30", Exclusive: "oversubscribe"}},
		{in: Options{Gres: "gres:gpu:mem:30g", MemPerGPU: "2048"}, want: Options{Gres: "gres:gpu:h100:1", MemPerGPU: "2048"}},
		{in: Options{Gres: "gres:gpu:mem:30g", CPUsPerGPU: "2"}, want: Options{Gres: "gres:gpu:h100:1", CPUsPerGPU: "2"}},
		{in: Options{Gres: "gres:gpu:mem:30g", NTasksPerGPU: "2"}, want: Options{Gres: "gres:gpu:h100:1", NTasksPerGPU: "2"}},
		{in: Options{Gres: "gres:gpu:mem:30g", GPUsPerTask: "1", NTasks: "2"}, want: Options{GPUsPerTask: "h100:1", NTasks: "2"}},
		{in: Options{Gres: "gres/gpu:mem:30g", TRESPerTask: "cpu=2,gres/gpu:1", NTasks: "2"}, want: Options{TRESPerTask: "cpu=2,gres/gpu:h100:1", NTasks: "2"}},
		{in: Options{Gres: "gres/gpu:mem:30g", TRESPerTask: "cpu=2"}, want: Options{Gres: "gres/shard:30", TRESPerTask: "cpu=2"}},
		// A client that prints --tres-per-task's GPUs as --gpus-per-task too gets both.
		{in: Options{Gres: "gres/gpu:mem:30g", TRESPerTask: "gres/gpu:1", GPUsPerTask: "1"}, want: Options{TRESPerTask: "gres/gpu:h100:1", GPUsPerTask: "h100:1"}},
		{in: Options{Gres: "gres:gpu:mem:30g", GPUFreq: "medium"}, want: Options{Gres: "gres:gpu:h100:1", GPUFreq: "medium"}},
		{in: Options{Gres: "gres:gpu:mem:30g", GPUsPerTask: "1", NTasks: "3"}, want: Options{Gres: "gres:gpu:mem:30g", GPUsPerTask: "1", NTasks: "3"},
			refusal: "gpumem: you asked for --gres=gpu:mem:30g --gpus-per-task=1 for 3 tasks, but partition gpu has no 3 GPUs of one type usable by the job"},
	}
	for _, c := range cases {
		got, refusal := p.SubmitOptions(c.in, 0, Fields{})
		if got != c.want || refusal != c.refusal {
			t.Errorf("SubmitOptions(%+v) = %+v, %q\nwant %+v, %q", c.in, got, refusal, c.want, c.refusal)
		}
	}
}
