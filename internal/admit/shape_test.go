package admit

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/shard"
)

// labCluster is the e2e lab: n1 two shared H100s, n2 an A100 in MIG mode (3g.20gb,
// 2g.10gb, two 1g.5gb), n3 four shared L4s; partitions gpu (all), train (n1, n2) and
// inference (n3). Features as the lab's slurm.conf gives them.
func labCluster() inventory.Cluster {
	a100 := inventory.GPU{Name: "NVIDIA A100-SXM4-40GB", Type: "a100-40gb", MemoryMiB: 40960, MIG: true, Instances: []inventory.MIGInstance{
		{Profile: "3g.20gb", MemoryMiB: 20096, Start: 4, Slices: 4},
		{Profile: "2g.10gb", MemoryMiB: 9984, Start: 0, Slices: 2},
		{Profile: "1g.5gb", MemoryMiB: 4864, Start: 2, Slices: 1},
		{Profile: "1g.5gb", MemoryMiB: 4864, Start: 3, Slices: 1},
	}}
	return inventory.Cluster{Nodes: []inventory.Node{
		{Name: "n1", Partitions: []string{"gpu", "train"}, Features: []string{"h100", "nvlink"}, GPUs: gpus(2, "NVIDIA H100 80GB HBM3", "h100", 81559, "")},
		{Name: "n2", Partitions: []string{"gpu", "train"}, Features: []string{"a100", "mig"}, GPUs: []inventory.GPU{a100}},
		{Name: "n3", Partitions: []string{"gpu", "inference"}, Features: []string{"l4"}, GPUs: gpus(4, "NVIDIA L4", "l4", 23034, "")},
	}}
}

func labAdmitter(t *testing.T) *Admitter {
	t.Helper()
	a, err := New(labCluster(), []string{"gpu"}, Options{PreferMIG: true})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestShapes is the table, one row each, plus the node-count, node-list,
// exclude, feature and per-GPU option forms: the native form chosen, or the refusal,
// which never shows an internal form.
func TestShapes(t *testing.T) {
	a := labAdmitter(t)
	cases := []struct {
		name string
		in   Job
		gres string // want: TresPerNode after translation (and TresPerTask), or
		task string
		err  string // want: a refusal containing this
		kind placement.Kind
	}{
		{name: "array of ten 5g tasks runs on shards, not one MIG instance", in: Job{TresPerNode: "gres:gpu:mem:5g", Array: "0-9"}, gres: "gres:shard:5", kind: placement.Shard},
		{name: "a throttled array of one at a time may take the preferred MIG", in: Job{TresPerNode: "gres:gpu:mem:5g", Array: "0-9%1"}, gres: "gres:gpu:2g.10gb:1", kind: placement.MIG},
		{name: "one 7g job of a burst goes where most of them fit", in: Job{TresPerNode: "gres:gpu:mem:7g"}, gres: "gres:shard:7", kind: placement.Shard},
		{name: "-N2 10g: shards on n1 and n3, not the MIG only n2 has", in: Job{TresPerNode: "gres:gpu:mem:10g", MinNodes: 2}, gres: "gres:shard:10", kind: placement.Shard},
		{name: "-w n3 8g: shards of an L4, not MIG", in: Job{TresPerNode: "gres:gpu:mem:8g", ReqNodes: "n3"}, gres: "gres:shard:8", kind: placement.Shard},
		{name: "-w n[1,3] 8g", in: Job{TresPerNode: "gres:gpu:mem:8g", ReqNodes: "n[1,3]"}, gres: "gres:shard:8", kind: placement.Shard},
		{name: "-w n2 8g: the MIG node's 2g.10gb", in: Job{TresPerNode: "gres:gpu:mem:8g", ReqNodes: "n2"}, gres: "gres:gpu:2g.10gb:1", kind: placement.MIG},
		{name: "-w n3 30g: refused naming n3 and its limit", in: Job{TresPerNode: "gres:gpu:mem:30g", ReqNodes: "n3"},
			err: "gpumem: you asked for --gres=gpu:mem:30g --nodelist=n3, but on node n3 the GPUs are NVIDIA L4 with 22.4 GiB = 23034 MiB; up to gpu:mem:23034m per GPU fits there"},
		{name: "hetjob component 5g", in: Job{TresPerNode: "gres:gpu:mem:5g", HetJob: true}, gres: "gres:shard:5", kind: placement.Shard},
		{name: "hetjob component 6g", in: Job{TresPerNode: "gres:gpu:mem:6g", HetJob: true}, gres: "gres:shard:6", kind: placement.Shard},
		{name: "gpu:mem with shard is refused, not dropped", in: Job{TresPerNode: "gres:gpu:mem:20g,gres:shard:3"},
			err: "--gres=gpu:mem:20g cannot be combined with --gres=shard:3"},
		{name: "--gpus=3 with 30g", in: Job{TresPerNode: "gres/gpu:mem:30g", TresPerJob: "gres/gpu:3"},
			err: "gpumem: you asked for --gres=gpu:mem:30g --gpus=3, but in partition gpu, the most that fits for 3 GPUs is gpu:mem:23034m per GPU (NVIDIA L4)"},
		{name: "23035m in the L4 partition names both sizes exactly", in: Job{TresPerNode: "gres:gpu:mem:23035m", Partitions: []string{"inference"}},
			err: "gpumem: you asked for --gres=gpu:mem:23035m, but the largest GPU in partition inference has 22.4 GiB = 23034 MiB (NVIDIA L4); up to gpu:mem:23034m per GPU fits there. It fits in partition gpu, train (--partition=gpu)"},
		{name: "--gpus-per-node=l4:1 with 30g cites the L4", in: Job{TresPerNode: "gres:gpu:l4:1,gres:gpu:mem:30g"},
			err: "gpumem: you asked for --gres=gpu:mem:30g --gpus-per-node=l4:1, but in partition gpu, the most that fits on type l4 is gpu:mem:23034m per GPU (NVIDIA L4)"},
		{name: "-x n1 30g: nothing else holds it", in: Job{TresPerNode: "gres:gpu:mem:30g", ExcNodes: "n1"},
			err: "gpumem: you asked for --gres=gpu:mem:30g --exclude=n1, but in partition gpu, the most that fits on the nodes the job may use is gpu:mem:23034m per GPU (NVIDIA L4)"},
		{name: "-x n1 19g: the L4 shards", in: Job{TresPerNode: "gres:gpu:mem:19g", ExcNodes: "n1"}, gres: "gres:shard:19", kind: placement.Shard},
		{name: "-x n[1,3] 19g: the 3g.20gb", in: Job{TresPerNode: "gres:gpu:mem:19g", ExcNodes: "n[1,3]"}, gres: "gres:gpu:3g.20gb:1", kind: placement.MIG},
		{name: "-C l4 10g", in: Job{TresPerNode: "gres:gpu:mem:10g", Features: "l4"}, gres: "gres:shard:10", kind: placement.Shard},
		{name: "-C mig 10g", in: Job{TresPerNode: "gres:gpu:mem:10g", Features: "mig"}, gres: "gres:gpu:3g.20gb:1", kind: placement.MIG},
		{name: "-C 'h100|l4' -N2 10g", in: Job{TresPerNode: "gres:gpu:mem:10g", Features: "h100|l4", MinNodes: 2}, gres: "gres:shard:10", kind: placement.Shard},
		{name: "-C h100 -N2 10g: one such node", in: Job{TresPerNode: "gres:gpu:mem:10g", Features: "h100", MinNodes: 2},
			err: "gpumem: you asked for --gres=gpu:mem:10g --nodes=2 --constraint=h100, but partition gpu has fewer than 2 nodes the job may use with GPUs of one kind for it (1 hold it); it fits on 1 (--nodes=1)"},
		{name: "-N2 30g: only n1 holds it", in: Job{TresPerNode: "gres:gpu:mem:30g", MinNodes: 2},
			err: "gpumem: you asked for --gres=gpu:mem:30g --nodes=2, but in partition gpu, the most that fits on 2 nodes is gpu:mem:22g per GPU (shards of NVIDIA L4); only 1 of its nodes can hold gpu:mem:30g (--nodes=1 runs it)"},
		{name: "-N3 4g: no one form is on all three nodes", in: Job{TresPerNode: "gres:gpu:mem:4g", MinNodes: 3},
			err: "partition gpu has fewer than 3 nodes the job may use"},
		{name: "-w n3 -p train", in: Job{TresPerNode: "gres:gpu:mem:8g", ReqNodes: "n3", Partitions: []string{"train"}},
			err: "node n3 is not in partition train (it is in gpu, inference)"},
		{name: "two GPUs per node on n3", in: Job{TresPerNode: "gres:gpu:mem:20g,gres:gpu:2", ReqNodes: "n3"}, gres: "gres:gpu:l4:2", kind: placement.Whole},
		{name: "--gpus=4 -N2 30g: whole H100s are two", in: Job{TresPerNode: "gres/gpu:mem:30g", TresPerJob: "gres/gpu:4", MinNodes: 2},
			err: "gpumem: you asked for --gres=gpu:mem:30g --gpus=4 --nodes=2"},
		{name: "--gpus=4 -N2 20g: L4s", in: Job{TresPerNode: "gres/gpu:mem:20g", TresPerJob: "gres/gpu:4", MinNodes: 2},
			err: "fewer than 2 nodes the job may use"},
		{name: "--gpus=4 20g: four L4", in: Job{TresPerNode: "gres/gpu:mem:20g", TresPerJob: "gres/gpu:4"}, gres: "", kind: placement.Whole},
		// Options that count GPUs as Slurm does get GPUs Slurm counts (a MIG instance or
		// whole GPUs, never shards); --gpus-per-task gives each task its GPUs, gpu:mem each.
		{name: "--exclusive 5g: a whole L4 (four of them), not shards", in: Job{TresPerNode: "gres:gpu:mem:5g", GPUsOnly: "--exclusive"},
			gres: "gres:gpu:l4:1", kind: placement.Whole},
		{name: "--exclusive -C mig 4g: the MIG instance", in: Job{TresPerNode: "gres:gpu:mem:4g", GPUsOnly: "--exclusive", Features: "mig"},
			gres: "gres:gpu:1g.5gb:1", kind: placement.MIG},
		{name: "--exclusive 30g: a whole H100", in: Job{TresPerNode: "gres:gpu:mem:30g", GPUsOnly: "--exclusive"},
			gres: "gres:gpu:h100:1", kind: placement.Whole},
		{name: "--exclusive -p inference 10g: a whole L4", in: Job{TresPerNode: "gres/gpu:mem:10g", GPUsOnly: "--exclusive", Partitions: []string{"inference"}},
			gres: "gres/gpu:l4:1", kind: placement.Whole},
		{name: "--mem-per-gpu --cpus-per-gpu 10g", in: Job{TresPerNode: "gres:gpu:mem:10g", GPUsOnly: "--mem-per-gpu --cpus-per-gpu"},
			gres: "gres:gpu:l4:1", kind: placement.Whole},
		{name: "--ntasks-per-gpu -p inference", in: Job{TresPerNode: "gres:gpu:mem:10g", GPUsOnly: "--ntasks-per-gpu", Partitions: []string{"inference"}},
			gres: "gres:gpu:l4:1", kind: placement.Whole},
		{name: "--gpus-per-task=1 -n2 10g: one GPU per task, typed", in: Job{TresPerNode: "gres:gpu:mem:10g", TresPerTask: "gres:gpu:1", Tasks: 2, Partitions: []string{"inference"}},
			task: "gres:gpu:l4:1", kind: placement.Whole},
		{name: "--gpus-per-task=1 -n2 4g on the MIG node: two 1g.5gb", in: Job{TresPerNode: "gres/gpu:mem:4g", TresPerTask: "gres/gpu:1", Tasks: 2, ReqNodes: "n2"},
			task: "gres/gpu:1g.5gb:1", kind: placement.MIG},
		{name: "--gpus-per-task=2 -n3 30g: six H100s there are not", in: Job{TresPerNode: "gres:gpu:mem:30g", TresPerTask: "gres:gpu:2", Tasks: 3},
			err: "gpumem: you asked for --gres=gpu:mem:30g --gpus-per-task=2 for 3 tasks, but"},
		{name: "--mem-per-gpu 60g -p inference names the option", in: Job{TresPerNode: "gres:gpu:mem:60g", GPUsOnly: "--mem-per-gpu", Partitions: []string{"inference"}},
			err: "gpumem: you asked for --gres=gpu:mem:60g --mem-per-gpu, but"},
		{name: "--gpus-per-socket is refused in the user's words", in: Job{TresPerNode: "gres:gpu:mem:10g", TresPerSocket: "gres:gpu:1"},
			err: "--gpus-per-socket=1 cannot be combined with --gres=gpu:mem"},
	}
	for _, c := range cases {
		d, err := a.Admit(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: got %+v, %v\nwant refusal containing %q", c.name, d.Job, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.err == "" && (d.TresPerNode != c.gres || d.TresPerTask != c.task || d.Kind != c.kind):
			t.Errorf("%s: got %q, per task %q (%v, %s), want %q, %q (%v)", c.name, d.TresPerNode, d.TresPerTask, d.Kind, d.Explain, c.gres, c.task, c.kind)
		}
		if err != nil && (strings.Contains(err.Error(), "tres_per") || strings.Contains(err.Error(), "gres:") || strings.Contains(err.Error(), "gres/")) {
			t.Errorf("%s: refusal names an internal field: %v", c.name, err)
		}
	}
}

// TestUsageChoosesRoomNow: with the shared GPUs taken, a job goes to the MIG instance
// that is free; with them free, to the shards; and the decision says it rested on usage.
func TestUsageChoosesRoomNow(t *testing.T) {
	a := labAdmitter(t)
	full := &Usage{Shards: map[string]map[int]int64{"n1": {0: 79, 1: 79}, "n3": {0: 22, 1: 22, 2: 22, 3: 22}}}
	d, err := a.AdmitWith(Job{TresPerNode: "gres:gpu:mem:7g"}, full)
	if err != nil || d.TresPerNode != "gres:gpu:2g.10gb:1" || !d.Live {
		t.Errorf("shards taken: %+v %v; want the free 2g.10gb, live", d, err)
	}
	some := &Usage{Shards: map[string]map[int]int64{"n1": {0: 79}}}
	d, err = a.AdmitWith(Job{TresPerNode: "gres:gpu:mem:7g"}, some)
	if err != nil || d.TresPerNode != "gres:shard:7" || !d.Live {
		t.Errorf("room on shards: %+v %v", d, err)
	}
	// -w n3 with n3 full and the rest free: still n3's shards (it is required), soonest.
	d, err = a.AdmitWith(Job{TresPerNode: "gres:gpu:mem:7g", ReqNodes: "n3"}, full)
	if err != nil || d.TresPerNode != "gres:shard:7" {
		t.Errorf("-w n3, n3 busy: %+v %v", d, err)
	}
	// Whole GPUs: a shared GPU with shards taken is not free whole.
	d, err = a.AdmitWith(Job{TresPerNode: "gres:gpu:mem:20g,gres:gpu:2", ReqNodes: "n1"}, some)
	if err != nil || d.TresPerNode != "gres:gpu:h100:2" {
		t.Errorf("whole H100s: %+v %v", d, err)
	}
	d, _ = a.Admit(Job{TresPerNode: "gres:gpu:mem:7g"})
	if d.Live {
		t.Error("a decision without usage is marked live")
	}
}

// minTranslated is a floor under the shapes TestShapeNeverUnrunnable's grid translates
// on the lab's cluster (1140 of 8624 when written; most of the rest combine a node list
// with its own exclusion or a partition it is not in): a core that refused more would
// still pass the runnable checks.
const minTranslated = 1000

// TestShapeNeverUnrunnable: whatever the shape, a translated job names a form that every
// required node has, and that enough usable nodes of each partition it may use have,
// holding the size asked; refusals are gpumem's; and most of the grid translates.
func TestShapeNeverUnrunnable(t *testing.T) {
	a := labAdmitter(t)
	c := labCluster()
	sizes := []string{"1g", "4g", "5g", "9g", "10g", "19g", "20g", "22g", "23034m", "30g", "79g"}
	mib := map[string]int64{"23034m": 23034}
	for _, s := range sizes {
		if mib[s] == 0 {
			n, _ := strconv.Atoi(strings.TrimSuffix(s, "g"))
			mib[s] = int64(n) << 10
		}
	}
	var accepted, refused int
	lists := []string{"", "n1", "n2", "n3", "n[1-2]", "n[1,3]", "n[1-3]"}
	for _, size := range sizes {
		for _, req := range lists {
			for _, exc := range lists {
				for _, nodes := range []uint32{0, 1, 2, 3} {
					for _, part := range []string{"", "train", "inference", "gpu,inference"} {
						j := Job{TresPerNode: "gres:gpu:mem:" + size, ReqNodes: req, ExcNodes: exc, MinNodes: nodes}
						if part != "" {
							j.Partitions = strings.Split(part, ",")
						}
						d, err := a.Admit(j)
						if err != nil {
							refused++
							if !strings.HasPrefix(err.Error(), "gpumem: ") {
								t.Fatalf("%+v: refusal %q does not say it is gpumem's", j, err)
							}
							continue
						}
						accepted++
						if !d.Changed || d.GRES == "" || d.MiB != mib[size] || d.Kind == placement.Shard && d.Units < d.MiB {
							t.Fatalf("%+v -> %+v: want a translation holding %d MiB per GPU", j, d, mib[size])
						}
						checkRunnable(t, a, c, j, d)
					}
				}
			}
		}
	}
	// A core that refused everything would pass the loop: most shapes must run.
	t.Logf("%d shapes translated, %d refused", accepted, refused)
	if accepted < minTranslated {
		t.Errorf("only %d of %d shapes translated; the lab's cluster runs at least %d of them", accepted, accepted+refused, minTranslated)
	}
}

func checkRunnable(t *testing.T, a *Admitter, c inventory.Cluster, j Job, d Decision) {
	t.Helper()
	sh, _ := a.shapeOf(&j)
	for _, p := range d.Serving {
		var ok int64
		for _, n := range c.Nodes {
			if !slices.Contains(n.Partitions, p) || sh.exc[n.Name] {
				continue
			}
			if nodeHolds(n, d) {
				ok++
			} else if slices.Contains(sh.req, n.Name) {
				t.Fatalf("%+v -> %s in %s: required node %s cannot hold it", j, d.GRES, p, n.Name)
			}
		}
		if ok < sh.nodes {
			t.Fatalf("%+v -> %s in %s: %d nodes hold it, the job spans %d", j, d.GRES, p, ok, sh.nodes)
		}
	}
	if !reflect.DeepEqual(d.ReqNodes, j.ReqNodes) {
		t.Fatalf("required nodes rewritten")
	}
}

func nodeHolds(n inventory.Node, d Decision) bool {
	for _, g := range n.GPUs {
		switch {
		case d.Kind == placement.Shard && g.Shared() && shard.PerGPU(g.MemoryMiB, shard.DefaultUnitMiB)*shard.DefaultUnitMiB >= d.Units:
			return true
		case d.Kind == placement.Whole && !g.MIG && g.Type == d.Model && g.MemoryMiB >= d.MiB:
			return true
		case d.Kind == placement.MIG && g.MIG:
			for _, in := range g.Instances {
				if in.Profile == d.Model && in.MemoryMiB >= d.MiB {
					return true
				}
			}
		}
	}
	return false
}
