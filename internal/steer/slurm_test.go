package steer

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
)

// Recorded from the 24.11 lab (scontrol -d -o show job), cut to the fields that matter.
const jobs2411 = `JobId=1 JobName=wrap JobState=RUNNING Reason=None Nodes=1 NumCPUs=1 JOB_GRES=shard:20   Nodes=n1 CPU_IDs=0 Mem=0 GRES=shard:20(20/80,0/80) MinCPUsNode=1
JobId=2 JobName=wrap JobState=RUNNING Reason=None Nodes=1 NumCPUs=1 JOB_GRES=shard:70   Nodes=n1 CPU_IDs=8 Mem=0 GRES=shard:70(0/80,70/80) MinCPUsNode=1
JobId=3 JobName=wrap JobState=RUNNING Reason=None JOB_GRES=shard:10   Nodes=n3 CPU_IDs=0 Mem=0 GRES=shard:10(10/22,0/22,0/22,0/22) MinCPUsNode=1
JobId=4 JobName=wrap JobState=PENDING Reason=Resources TresPerNode=gres/gpu:h100:1
JobId=5 JobName=wrap JobState=RUNNING JOB_GRES=gpu:h100:1   Nodes=gpu[07-08] CPU_IDs=0 Mem=0 GRES=gpu:h100:1(IDX:1)
JobId=6 JobName=wrap JobState=COMPLETED Nodes=n3 CPU_IDs=0 Mem=0 GRES=shard:5(5/22,0/22,0/22,0/22)
`

func TestParseJobsReadsEachGPUsShare(t *testing.T) {
	got, err := ParseJobs(jobs2411)
	if err != nil {
		t.Fatal(err)
	}
	want := []Use{
		{Node: "n1", GPU: 0, Shards: 20}, {Node: "n1", GPU: 1, Shards: 70}, {Node: "n3", GPU: 0, Shards: 10},
		{Node: "gpu07", GPU: 1, Whole: true}, {Node: "gpu08", GPU: 1, Whole: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("uses\n got %+v\nwant %+v", got, want)
	}
	idx, err := ParseJobs("JobId=9 JobState=RUNNING   Nodes=n1 CPU_IDs=0 Mem=0 GRES=shard:h100:30(IDX:1)")
	if err != nil || !reflect.DeepEqual(idx, []Use{{Node: "n1", GPU: 1, Shards: 30}}) {
		t.Errorf("index form: %+v, %v", idx, err)
	}
	// Typed shards (ShardTypes = per-gpu), recorded: 24.11 prints one entry per type,
	// each with the job's shards on every GPU of the node; 22.05 the index, empty for
	// the types an untyped job took nothing of.
	typed, err := ParseJobs("JobId=7 JobState=RUNNING   Nodes=n3 CPU_IDs=0 Mem=0 GRES=shard:l4_g0:7(7/22,0/22,0/22,0/22),shard:l4_g1:0(0/22,0/22,0/22,0/22),shard:l4_g2:0(0/22,0/22,0/22,0/22)\n" +
		"JobId=8 JobState=RUNNING   Nodes=n3 CPU_IDs=4 Mem=0 GRES=shard:l4_g1:5(0/22,5/22,0/22,0/22)\n" +
		"JobId=9 JobState=RUNNING   Nodes=n1 CPU_IDs=8 Mem=0 GRES=shard:h100_g1:20(IDX:1)\n" +
		"JobId=10 JobState=RUNNING   Nodes=n1 CPU_IDs=0 Mem=0 GRES=shard:h100_g0:24(IDX:0),shard:h100_g1:0(IDX:)")
	if want := []Use{{Node: "n3", GPU: 0, Shards: 7}, {Node: "n3", GPU: 1, Shards: 5}, {Node: "n1", GPU: 1, Shards: 20}, {Node: "n1", GPU: 0, Shards: 24}}; err != nil || !reflect.DeepEqual(typed, want) {
		t.Errorf("typed shards: %+v, %v; want %+v", typed, err, want)
	}
	if _, err := ParseJobs("JobId=9 JobState=RUNNING   Nodes=n1 CPU_IDs=0 Mem=0 GRES=shard:30(x/80)"); err == nil || !strings.Contains(err.Error(), "TAKEN/TOTAL") {
		t.Errorf("bad per-GPU use: err %v", err)
	}
}

func TestParsePendingKeepsShardJobsInOrder(t *testing.T) {
	got, err := ParsePending("12|gpu|gres/shard:20\n13|gpu|gres/gpu:h100:1\n14|train,gpu|gres:shard:h100:5\n15|gpu|N/A\n", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := []Pending{{ID: "12", Partitions: []string{"gpu"}, Shards: 20}, {ID: "14", Partitions: []string{"train", "gpu"}, Shards: 5, Type: "h100"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pending %+v, want %+v", got, want)
	}
	if _, err := ParsePending("12 gpu shard:20", time.UTC); err == nil || !strings.Contains(err.Error(), "%i|%P|%b|%n|%V") {
		t.Errorf("wrong format: err %v", err)
	}
	if _, err := ParsePending("12|gpu|gres/shard:20|n1|yesterday", time.UTC); err == nil || !strings.Contains(err.Error(), `submit time "yesterday"`) {
		t.Errorf("bad submit time: err %v", err)
	}
}

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
	pending, err := ParsePending(pinnedQueue, loc)
	if err != nil {
		t.Fatal(err)
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

func TestParseNodes(t *testing.T) {
	got, err := ParseNodes("NodeName=n1 Arch=x86_64 CoresPerSocket=1 Gres=gpu:h100:2(S:0-15),shard:h100:160(S:0-15) OS=Linux 6.1.0 #1 SMP Weight=1 Owner=N/A\nNodeName=n3 Arch=x86_64 Weight=7 Owner=N/A\n")
	if err != nil || !reflect.DeepEqual(got, []SlurmNode{{"n1", 1}, {"n3", 7}}) {
		t.Errorf("nodes %+v, %v", got, err)
	}
	if _, err := ParseNodes("NodeName=n1 Arch=x86_64"); err == nil || !strings.Contains(err.Error(), "Weight=") {
		t.Errorf("missing weight: err %v", err)
	}
}

func TestClusterAppliesUseToShareableGPUs(t *testing.T) {
	inv := inventory.Cluster{Nodes: []inventory.Node{
		{Name: "n1", Partitions: []string{"gpu"}, GPUs: []inventory.GPU{{Index: 0, Type: "h100", MemoryMiB: 81920}, {Index: 1, Type: "h100", MemoryMiB: 81920}}},
		{Name: "n2", GPUs: []inventory.GPU{{Index: 0, Type: "a100", MIG: true, Instances: []inventory.MIGInstance{{Profile: "3g.20gb"}, {Profile: "3g.20gb"}}}}},
		{Name: "mix", GPUs: []inventory.GPU{{Index: 0, MIG: true, Instances: []inventory.MIGInstance{{Profile: "7g.80gb"}}}, {Index: 1, MemoryMiB: 24576}}},
	}}
	cl := NewCluster(inv, func(mib int64) int64 { return mib / 1024 })
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

func TestJobUsesByJobID(t *testing.T) {
	got, err := JobUses(jobs2411 + "JobId=11 JobName=cpu JobState=RUNNING Nodes=n2 CPU_IDs=0 Mem=0 GRES=\n" +
		"JobId=12 JobState=RUNNING   Nodes=n1 CPU_IDs=0 Mem=0 GRES=shard:30(IDX:1)\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]Use{
		"1": {{Node: "n1", GPU: 0, Shards: 20}}, "2": {{Node: "n1", GPU: 1, Shards: 70}}, "3": {{Node: "n3", GPU: 0, Shards: 10}},
		"5":  {{Node: "gpu07", GPU: 1, Whole: true}, {Node: "gpu08", GPU: 1, Whole: true}},
		"11": nil, "12": {{Node: "n1", GPU: 1, Shards: 30}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("by job\n got %+v\nwant %+v", got, want)
	}
	if _, err := JobUses("JobId=9 JobState=RUNNING   Nodes=n1 CPU_IDs=0 Mem=0 GRES=shard:30(x/80)"); err == nil || !strings.Contains(err.Error(), "TAKEN/TOTAL") {
		t.Errorf("bad per-GPU use: err %v", err)
	}
}
