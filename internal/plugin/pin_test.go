package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/steer"
)

// pinHarness is a job_submit plugin over the real core with per-GPU shard types: n1 has
// two 80 GiB H100s (79 shards each), n3 four L4s (22 shards each, also in inference).
type pinHarness struct {
	t     *testing.T
	dir   string
	sink  *logSink
	clock time.Time
	p     *Plugin
}

func newPinHarness(t *testing.T, conf string) *pinHarness {
	h := &pinHarness{t: t, dir: t.TempDir(), sink: &logSink{}, clock: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	inv := `{"nodes": [
 {"name": "n1", "partitions": ["gpu"], "gpus": [
  {"index": 0, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 81559},
  {"index": 1, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 81559}]},
 {"name": "n3", "partitions": ["gpu", "inference"], "gpus": [
  {"index": 0, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034},
  {"index": 1, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034},
  {"index": 2, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034},
  {"index": 3, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034}]}]}`
	h.write("inventory.json", inv)
	h.write("slurm.conf", "NodeName=n1 Gres=gpu:h100_g0:1,gpu:h100_g1:1,shard:h100_g0:79,shard:h100_g1:79\n"+
		"NodeName=n3 Gres=gpu:l4_g0:1,gpu:l4_g1:1,gpu:l4_g2:1,gpu:l4_g3:1,shard:l4_g0:22,shard:l4_g1:22,shard:l4_g2:22,shard:l4_g3:22\n"+
		"PartitionName=gpu Nodes=n1,n3 Default=YES\nPartitionName=inference Nodes=n3\n")
	// The loader looks at the files before every job (ReloadInterval = 0), so a snapshot
	// written is seen by the next job.
	h.write("gpumem.conf", fmt.Sprintf("InventoryPath = %s\nSlurmConf = %s\nUsageSnapshot = %s\nLogLevel = debug\nReloadInterval = 0\n%s",
		filepath.Join(h.dir, "inventory.json"), filepath.Join(h.dir, "slurm.conf"), h.snapPath(), conf))
	h.p = newPlugin(filepath.Join(h.dir, "gpumem.conf"), "job_submit/gpumem", h.sink, AdmitCore, func() time.Time { return h.clock }, false)
	h.p.reload()
	if len(h.sink.errors) > 0 {
		t.Fatalf("plugin did not load cleanly: %v", h.sink.errors)
	}
	return h
}

func (h *pinHarness) write(name, body string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, name), []byte(body), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *pinHarness) snapPath() string { return filepath.Join(h.dir, "usage.json") }

// snapshot writes a usage snapshot taken at the harness clock, with a new file time.
func (h *pinHarness) snapshot(sizes []int64, uses ...steer.GPUUse) {
	h.t.Helper()
	b, err := steer.Snapshot{Taken: h.clock, Sizes: sizes, GPUs: uses}.Encode()
	if err != nil {
		h.t.Fatal(err)
	}
	h.write("usage.json", string(b))
	h.clock = h.clock.Add(time.Second)
	if err := os.Chtimes(h.snapPath(), h.clock, h.clock); err != nil {
		h.t.Fatal(err)
	}
}

// submit runs one job through job_submit's decision and returns tres_per_node and the
// required nodes it ends with.
func (h *pinHarness) submit(f Fields) (string, string) {
	h.t.Helper()
	h.clock = h.clock.Add(10 * time.Millisecond)
	h.p.reload()
	v := h.p.SubmitPinned(f)
	if v.Refusal != "" {
		h.t.Fatalf("%+v refused: %s", f, v.Refusal)
	}
	if _, _, ok := pinnable(Fields{PerNode: f.PerNode}); ok && v.Fresh != 0 {
		h.t.Errorf("%+v: verdict fresh for %s; a pinnable job's verdict must never be reused", f, v.Fresh)
	}
	return v.Fields.PerNode, v.Fields.ReqNodes
}

func (h *pinHarness) want(f Fields, perNode, reqNodes string) {
	h.t.Helper()
	got, nodes := h.submit(f)
	if got != perNode || nodes != reqNodes {
		h.t.Errorf("%+v -> %q on %q; want %q on %q", f, got, nodes, perNode, reqNodes)
	}
}

func TestNoSnapshotNoPin(t *testing.T) {
	h := newPinHarness(t, "ShardTypes = per-gpu\nPinPolicy = best-fit\n")
	h.want(Fields{PerNode: "gres/shard:20"}, "gres/shard:20", "")
	h.want(Fields{PerNode: "gres/gpu:mem:20g"}, "gres/shard:20", "")
	if !h.sink.has("not pinned (gres/shard:20): no usage snapshot at " + h.snapPath()) {
		t.Errorf("log does not say why: %v", h.sink.debugs)
	}
}

func TestStaleOrBrokenSnapshotNoPin(t *testing.T) {
	h := newPinHarness(t, "ShardTypes = per-gpu\nPinPolicy = best-fit\nUsageMaxAge = 10s\n")
	h.snapshot(nil)
	h.want(Fields{PerNode: "gres/shard:20"}, "gres/shard:l4_g0:20", "n3")
	h.clock = h.clock.Add(11 * time.Second)
	h.want(Fields{PerNode: "gres/shard:20"}, "gres/shard:20", "")
	if !h.sink.has("more than UsageMaxAge 10s") {
		t.Errorf("log does not say the snapshot is stale: %v", h.sink.debugs)
	}
	h.write("usage.json", `{"gpus": []}`)
	h.want(Fields{PerNode: "gres/shard:20"}, "gres/shard:20", "")
	if !h.sink.has(`no "taken" time`) {
		t.Errorf("a snapshot without a time was not reported: %v", h.sink.errors)
	}
	h.write("usage.json", `{"taken": "2026-11-30T12:00:20Z", "gpus": [{"node": "n1", "gpu": 0, "shards": -3}]}`)
	h.want(Fields{PerNode: "gres/shard:20"}, "gres/shard:20", "")
	if !h.sink.has("want a node, a GPU index >= 0 and shards >= 0") {
		t.Errorf("a negative use was not reported: %v", h.sink.errors)
	}
}

// Pins are committed, so a burst between two snapshots spreads as the policy places it;
// a job that fits nowhere is left to Slurm; a later snapshot replaces the pins it covers.
func TestPinsCommitAndFollowThePolicy(t *testing.T) {
	h := newPinHarness(t, "ShardTypes = per-gpu\nPinPolicy = best-fit\n")
	h.snapshot(nil, steer.GPUUse{Node: "n1", GPU: 1, Shards: 60})
	// Best fit takes the node with the least left (n3, 88 shards, against n1's 98).
	h.want(Fields{PerNode: "gres/shard:15"}, "gres/shard:l4_g0:15", "n3")
	h.want(Fields{PerNode: "gres/shard:15"}, "gres/shard:l4_g1:15", "n3") // not onto l4_g0 again
	h.want(Fields{PerNode: "gres:shard:20"}, "gres:shard:l4_g2:20", "n3") // 22.05's prefix is kept
	h.want(Fields{PerNode: "gres/gpu:mem:20g"}, "gres/shard:l4_g3:20", "n3")
	h.want(Fields{PerNode: "gres/shard:20", Partition: "inference"}, "gres/shard:20", "") // the L4s have 7, 7, 2, 2 left
	if !h.sink.has("20 shards fit on no GPU now") {
		t.Errorf("log does not say why the job was not pinned: %v", h.sink.debugs)
	}
	h.want(Fields{PerNode: "gres/shard:20"}, "gres/shard:h100_g0:20", "n1") // h100_g1 has 19 left
	h.want(Fields{PerNode: "gres/shard:70"}, "gres/shard:70", "")           // 59 and 19 left

	// steer's next snapshot sees only the 60 shards still running: every earlier pin
	// has ended, and the H100s are free again.
	h.snapshot(nil, steer.GPUUse{Node: "n1", GPU: 1, Shards: 60})
	h.want(Fields{PerNode: "gres/shard:70"}, "gres/shard:h100_g0:70", "n1")
}

func TestOnlySingleUntypedShardJobsArePinned(t *testing.T) {
	h := newPinHarness(t, "ShardTypes = per-gpu\nPinPolicy = best-fit\n")
	h.snapshot(nil)
	for _, f := range []Fields{
		{PerNode: "gres/shard:20", ReqNodes: "n1"},        // the user chose the node
		{PerNode: "gres/shard:h100_g1:20"},                // the user chose the GPU
		{PerNode: "gres/shard:20,gres/gpu:1"},             // more than shards
		{PerNode: "gres/shard:20", PerTask: "gres/gpu:1"}, // GPUs per task
		{PerNode: "gres/gpu:h100:1"},
		{PerNode: "gres/shard:0"},
		{},
		// The job's shape narrows or spreads its nodes: Slurm chooses.
		{PerNode: "gres/shard:20", ExcNodes: "n3"},
		{PerNode: "gres/shard:20", Features: "h100"},
		{PerNode: "gres/shard:20", Reservation: "maint"},
		{PerNode: "gres/shard:20", ArrayInx: "0-9"},
		{PerNode: "gres/shard:20", MinNodes: 2, MaxNodes: 2},
		{PerNode: "gres/shard:20", MinNodes: 1, MaxNodes: 3},
		{PerNode: "gres/shard:20", HetJob: true},
		{PerNode: "gres/gpu:mem:20g", MinNodes: 2},
	} {
		want := f.PerNode
		if want == "gres/gpu:mem:20g" {
			want = "gres/shard:20"
		}
		h.want(f, want, f.ReqNodes)
	}
	// A one-node job that leaves the node to Slurm is pinned, whatever else it says.
	h.want(Fields{PerNode: "gres/shard:20", MinNodes: 1, MaxNodes: 1, NTasksPerNode: 4}, "gres/shard:l4_g0:20", "n3")
}

func TestShardTypesNoneNeverPins(t *testing.T) {
	h := newPinHarness(t, "PinPolicy = best-fit\n")
	h.snapshot(nil)
	h.want(Fields{PerNode: "gres/shard:20"}, "gres/shard:20", "")
	h.want(Fields{PerNode: "gres/gpu:mem:20g"}, "gres/shard:20", "")
	if h.p.Pins() {
		t.Error("Pins() true without ShardTypes = per-gpu")
	}
}

// The default policy (gpumem) pins too, with the snapshot's sizes as its target.
func TestDefaultPolicyPins(t *testing.T) {
	h := newPinHarness(t, "ShardTypes = per-gpu\n")
	if !h.p.Pins() {
		t.Fatal("Pins() false with ShardTypes = per-gpu")
	}
	h.snapshot([]int64{20, 20, 5})
	got, node := h.submit(Fields{PerNode: "gres/shard:20"})
	if !strings.HasPrefix(got, "gres/shard:") || !strings.HasSuffix(got, ":20") || node == "" || got == "gres/shard:20" {
		t.Errorf("gpumem policy: %q on %q; want a typed shard on a required node", got, node)
	}
}

// An unknown PinPolicy, or one that looks at every node for each job (too slow inside
// slurmctld's submit path), turns pinning off with an error that names it.
func TestUnknownPinPolicyDisablesPinning(t *testing.T) {
	slow := "looks at every node for each job, too slow inside slurmctld's submit path; pinning takes gpumem, best-fit, first-fit, spread"
	for name, want := range map[string]string{
		"nearest":     `PinPolicy: unknown placement policy "nearest"`,
		"fgd":         `PinPolicy: "fgd" ` + slow,
		"gpu-packing": `PinPolicy: "gpu-packing" ` + slow,
		"random":      `PinPolicy: "random" ` + slow,
	} {
		dir := t.TempDir()
		conf := filepath.Join(dir, "gpumem.conf")
		if err := os.WriteFile(conf, []byte("ShardTypes = per-gpu\nPinPolicy = "+name+"\nInventoryPath = "+dir+"/none\nRefusalCounts = "+dir+"/refusals.json\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		sink := &logSink{}
		p := New(conf, "job_submit/gpumem", sink, AdmitCore)
		if p.Pins() || !sink.has(want) {
			t.Errorf("PinPolicy = %s: pins %v, log %v; want pinning off and %q", name, p.Pins(), sink.errors, want)
		}
		p.Close()
	}
}

// Clients (cli_filter) never pin: srun, sbatch and salloc do not even make the pinner.
func TestClientsNeverPin(t *testing.T) {
	h := newPinHarness(t, "ShardTypes = per-gpu\n")
	c := NewClient(filepath.Join(h.dir, "gpumem.conf"), "cli_filter/gpumem", h.sink, AdmitCore)
	if c.Pins() {
		t.Error("a client plugin pins")
	}
	h.snapshot(nil)
	if v := c.SubmitPinned(Fields{PerNode: "gres/shard:20"}); v.Fields.PerNode != "gres/shard:20" || v.Fields.ReqNodes != "" {
		t.Errorf("client pinned: %+v", v.Fields)
	}
}

// A slurm.conf whose Gres= has untyped shards (gres.conf not rewritten, or refused for
// its Slurm release) gets no pins: Slurm would refuse a type it does not know.
func TestNoPinToATypeSlurmDoesNotKnow(t *testing.T) {
	h := newPinHarness(t, "ShardTypes = per-gpu\nPinPolicy = best-fit\n")
	h.write("slurm.conf", "NodeName=n1 Gres=gpu:h100:2,shard:158\nNodeName=n3 Gres=gpu:l4:4,shard:l4_g0:22\nPartitionName=gpu Nodes=n1,n3 Default=YES\n")
	h.p = newPlugin(filepath.Join(h.dir, "gpumem.conf"), "job_submit/gpumem", h.sink, AdmitCore, func() time.Time { return h.clock }, false)
	h.p.reload()
	h.snapshot(nil)
	h.want(Fields{PerNode: "gres/shard:20"}, "gres/shard:l4_g0:20", "n3")
	h.want(Fields{PerNode: "gres/shard:70"}, "gres/shard:70", "")
	if !h.sink.has("slurm.conf gives node n1 no shard:h100_g0") {
		t.Errorf("log does not say why: %v", h.sink.debugs)
	}
}
