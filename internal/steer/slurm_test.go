package steer

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmcli/slurmtest"
)

// Recorded from the 22.05 lab with typed shards (squeue -h -t PD -o PendingFormat).
const pinnedQueue = `21|gpu|gres:shard:h100_g0:20|n1|2026-11-30T16:55:48
22|gpu|gres:shard:20||2026-11-30T16:55:40
23|gpu|gres:shard:l4_g1:5|n3|2026-11-30T16:55:59
24|gpu|gres:shard:h100_g1:20|n[1-2]|2026-11-30T16:55:00
25|gpu|gres:shard:h100_g1:20||2026-11-30T16:55:00
26|gpu|gres:shard:h100:20|n1|2026-11-30T16:55:00
`

func TestUnpinTakesBackOnlyOldPins(t *testing.T) {
	loc := time.FixedZone("lab", 3600)
	queued, err := slurmcli.ParsePending(pinnedQueue, loc)
	if err != nil {
		t.Fatal(err)
	}
	var pending []Pending
	for _, p := range queued {
		pending = append(pending, Pending(p))
	}
	if p := pending[0]; p.Type != "h100_g0" || p.ReqNodes != "n1" || !p.Pinned() || !p.Submitted.Equal(time.Date(2026, 11, 30, 15, 55, 48, 0, time.UTC)) {
		t.Errorf("first job %+v; want pinned to h100_g0 on n1, submitted 15:55:48 UTC", p)
	}
	now := time.Date(2026, 11, 30, 15, 56, 0, 0, time.UTC)
	var ids []string
	for _, p := range Unpin(pending, now, 10*time.Second) {
		ids = append(ids, p.ID)
	}
	// 22 is not pinned, 23 is 1 s old, 24 names two nodes, 25 no node, 26 asks a model
	// type (a user's own choice, not a per-GPU pin): only 21 (12 s).
	if !reflect.DeepEqual(ids, []string{"21"}) {
		t.Errorf("unpinned %v; want [21]", ids)
	}
	if got := Unpin(pending, now, time.Minute); len(got) != 0 {
		t.Errorf("unpinned %+v within a minute; want none", got)
	}
}

func TestClusterAppliesUseToShareableGPUs(t *testing.T) {
	inv := inventory.Cluster{Nodes: []inventory.Node{
		{Name: "n1", Partitions: []string{"gpu"}, GPUs: []inventory.GPU{{Index: 0, Type: "h100", MemoryMiB: 81920}, {Index: 1, Type: "h100", MemoryMiB: 81920}}},
		{Name: "n2", GPUs: []inventory.GPU{{Index: 0, Type: "a100", MIG: true, Instances: []inventory.MIGInstance{{Profile: "3g.20gb"}, {Profile: "3g.20gb"}}}}},
		{Name: "mix", GPUs: []inventory.GPU{{Index: 0, MIG: true, Instances: []inventory.MIGInstance{{Profile: "7g.80gb"}}}, {Index: 1, MemoryMiB: 24576}}},
	}}
	cl := gibCluster(inv)
	if len(cl.State.Nodes) != 2 || cl.State.Nodes[1].Name != "mix" || len(cl.State.Nodes[1].Devices) != 1 {
		t.Fatalf("nodes %+v; want n1 and mix, the MIG-only node left out", cl.State.Nodes)
	}
	uses := []Use{{Node: "n1", GPU: 1, Shards: 30}, {Node: "n1", GPU: 1, Shards: 20}, {Node: "mix", GPU: 1, Whole: true}, {Node: "n2", GPU: 0, Whole: true}}
	if err := cl.Apply(uses); err != nil {
		t.Fatal(err)
	}
	if got := cl.State.Nodes[0].Devices[1].Used; got != 50 {
		t.Errorf("n1 GPU 1 used %d, want 50", got)
	}
	if dv := cl.State.Nodes[1].Devices[0]; dv.Used != dv.Capacity {
		t.Errorf("mix's shared GPU (gpu record 1, after one MIG instance) used %d of %d, want all", dv.Used, dv.Capacity)
	}
	if err := cl.Apply([]Use{{Node: "n2", GPU: 0, Shards: 4}}); err == nil || !strings.Contains(err.Error(), "no shareable GPU") {
		t.Errorf("shards on a MIG node: err %v", err)
	}
	if err := cl.Apply([]Use{{Node: "n1", GPU: 5, Shards: 4}}); err == nil || !strings.Contains(err.Error(), "2 shareable GPUs") {
		t.Errorf("shards on a GPU out of range: err %v", err)
	}
	free, stranded := Stranded(cl.State, []int64{40, 35})
	if free != 80+30 || stranded != 30 {
		t.Errorf("free %d, stranded %d; want 110 free, of which n1 GPU 1's 30 stranded (no size <= 30)", free, stranded)
	}
	if _, stranded := Stranded(cl.State, []int64{40, 25}); stranded != 0 {
		t.Errorf("stranded %d with a 25-shard size that fits the 30 free; want 0", stranded)
	}
}

// TestRefusedRecordKeepsItsGPU: on a Slurm without --json (22.05), job 50's name holds
// a line break, so its scontrol record is refused. Its shards still hold GPU 1 of t1:
// squeue says what it holds per node (here a per-GPU type), and steering counts it
// there, so nothing is pinned onto the full GPU. Job 51 reads normally.
func TestRefusedRecordKeepsItsGPU(t *testing.T) {
	s := slurmtest.New(t, true)
	s.SetJobs(slurmtest.Job{ID: "50", UID: 1001, Name: "nl\nJobId=77 x Nodes=t1 GRES=shard:0(0/80)", Node: "t1", GPU: 1, Shards: 80, PIDs: []int{1}},
		slurmtest.Job{ID: "51", UID: 1002, Name: "ok", Node: "t1", GPU: 2, Shards: 30, PIDs: []int{2}})
	os.WriteFile(filepath.Join(s.Dir, "running"), []byte("50|RUNNING|t1|gres/shard:h100_g1:80\n51|RUNNING|t1|gres/shard:h100_g2:30\n"), 0o644)
	r := &slurmcli.JobReader{Scontrol: slurmcli.Runner{Path: s.Scontrol}, Squeue: slurmcli.Runner{Path: s.Squeue}}
	jobs, err := r.Show(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Bad) == 0 || len(jobs.Unread) != 1 || jobs.Unread[0].ID != "50" {
		t.Fatalf("jobs %+v unread %+v bad %v; want job 50's record refused and read from squeue", jobs.Jobs, jobs.Unread, jobs.Bad)
	}
	var gpus []inventory.GPU
	for i := range 4 {
		gpus = append(gpus, inventory.GPU{Index: i, Type: "h100", MemoryMiB: 81920})
	}
	cl := gibCluster(inventory.Cluster{Nodes: []inventory.Node{{Name: "t1", GPUs: gpus}}})
	if err := cl.Apply(jobs.Uses()); err != nil {
		t.Fatal(err)
	}
	var used []int64
	for _, dv := range cl.State.Nodes[0].Devices {
		used = append(used, dv.Used)
	}
	if !reflect.DeepEqual(used, []int64{0, 80, 30, 0}) {
		t.Errorf("shards used per GPU %v; want [0 80 30 0]: job 50's 80 on GPU 1, job 51's 30 on GPU 2", used)
	}
	// An untyped request does not name its GPU: it is counted on every GPU it may be on.
	os.WriteFile(filepath.Join(s.Dir, "running"), []byte("50|RUNNING|t1|gres/shard:20\n51|RUNNING|t1|gres/shard:30\n"), 0o644)
	if jobs, err = r.Show(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	cl = gibCluster(inventory.Cluster{Nodes: []inventory.Node{{Name: "t1", GPUs: gpus}}})
	if err := cl.Apply(jobs.Uses()); err != nil {
		t.Fatal(err)
	}
	used = used[:0]
	for _, dv := range cl.State.Nodes[0].Devices {
		used = append(used, dv.Used)
	}
	if !reflect.DeepEqual(used, []int64{20, 20, 50, 20}) {
		t.Errorf("shards used per GPU %v; want [20 20 50 20]: job 50's 20 on any GPU, job 51's 30 on GPU 2", used)
	}
}
