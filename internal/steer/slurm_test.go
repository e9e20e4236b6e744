package steer

import (
	"reflect"
	"strings"
	"testing"

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
	if _, err := ParseJobs("JobId=9 JobState=RUNNING   Nodes=n1 CPU_IDs=0 Mem=0 GRES=shard:30(x/80)"); err == nil || !strings.Contains(err.Error(), "TAKEN/TOTAL") {
		t.Errorf("bad per-GPU use: err %v", err)
	}
}

func TestParsePendingKeepsShardJobsInOrder(t *testing.T) {
	got, err := ParsePending("12|gpu|gres/shard:20\n13|gpu|gres/gpu:h100:1\n14|train,gpu|gres:shard:h100:5\n15|gpu|N/A\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Pending{{ID: "12", Partitions: []string{"gpu"}, Shards: 20}, {ID: "14", Partitions: []string{"train", "gpu"}, Shards: 5}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pending %+v, want %+v", got, want)
	}
	if _, err := ParsePending("12 gpu shard:20"); err == nil || !strings.Contains(err.Error(), "%i|%P|%b") {
		t.Errorf("wrong format: err %v", err)
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
