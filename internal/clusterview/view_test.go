package clusterview

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/refusalcount"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmjob"
)

const gib = 1 << 30

func TestSizeClass(t *testing.T) {
	for b, want := range map[uint64]string{1: "1G", gib: "1G", gib + 1: "2G", 3 * gib: "4G", 8 * gib: "8G", 20 * gib: "32G", 80 * gib: "128G"} {
		if got := SizeClass(b); got != want {
			t.Errorf("SizeClass(%d) = %s, want %s", b, got, want)
		}
	}
}

// Two 80 GiB GPUs in partition gpu (a: 70 GiB taken; b: 65 GiB taken) and one whole
// 40 GiB GPU in partition big. A pending 20 GiB job fits in the 10 + 15 GiB free in
// total but on neither GPU alone: blocked by fragmentation.
func cluster() Input {
	now := time.Unix(10000, 0)
	return Input{
		Inventory: inventory.Cluster{Nodes: []inventory.Node{
			{Name: "a", Partitions: []string{"gpu"}, GPUs: []inventory.GPU{{Index: 0, MemoryMiB: 80 << 10}}},
			{Name: "b", Partitions: []string{"gpu"}, GPUs: []inventory.GPU{{Index: 0, MemoryMiB: 80 << 10}}},
			{Name: "c", Partitions: []string{"big"}, GPUs: []inventory.GPU{{Index: 0, MemoryMiB: 40 << 10, Sharing: inventory.SharingWhole}}},
		}},
		UnitMiB: 1024,
		Running: []slurmcli.Job{
			{ID: "1", State: "RUNNING", Uses: []slurmjob.Use{{Node: "a", GPU: 0, Shards: 70}}, Meta: slurmcli.Meta{Partition: "gpu"}},
			{ID: "2", State: "RUNNING", Uses: []slurmjob.Use{{Node: "b", GPU: 0, Shards: 65}}, Meta: slurmcli.Meta{Partition: "gpu"}},
			{ID: "3", State: "RUNNING", Uses: []slurmjob.Use{{Node: "c", GPU: 0, Whole: true}}, Meta: slurmcli.Meta{Partition: "big"}},
		},
		Pending: []slurmjob.Pending{
			{ID: "4", Partitions: []string{"gpu"}, Shards: 20, Submitted: now.Add(-100 * time.Second)},
			{ID: "5", Partitions: []string{"gpu"}, Shards: 3, Submitted: now.Add(-10 * time.Second)},
			{ID: "6", Partitions: []string{"gpu"}, Shards: 4},
		},
		Reasons: map[string]int{"Resources": 1, "Priority": 2},
		Now:     now,
	}
}

func TestComputeAndExport(t *testing.T) {
	v, err := Compute(cluster())
	if err != nil {
		t.Fatal(err)
	}
	if v.Blocked != 1 {
		t.Errorf("blocked %d, want 1 (the 20 GiB job: 25 GiB free, at most 15 on one GPU)", v.Blocked)
	}
	e := NewExporter()
	e.Set(v, time.Unix(10000, 0))
	if problems, err := testutil.CollectAndLint(e); err != nil || len(problems) != 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
	want := `
# HELP gpumem_cluster_pending_jobs Pending GPU-memory jobs (shards, MIG instances, whole GPUs at their GiB equivalent), by size class (the request per node rounded up to a power of two GiB).
# TYPE gpumem_cluster_pending_jobs gauge
gpumem_cluster_pending_jobs{size="32G"} 1
gpumem_cluster_pending_jobs{size="4G"} 2
# HELP gpumem_cluster_pending_oldest_wait_seconds The longest wait of a pending GPU-memory job of the size class, since submission.
# TYPE gpumem_cluster_pending_oldest_wait_seconds gauge
gpumem_cluster_pending_oldest_wait_seconds{size="32G"} 100
gpumem_cluster_pending_oldest_wait_seconds{size="4G"} 10
# HELP gpumem_cluster_free_memory_bytes GPU memory of shareable GPUs that no running job holds, cluster-wide.
# TYPE gpumem_cluster_free_memory_bytes gauge
gpumem_cluster_free_memory_bytes 2.68435456e+10
# HELP gpumem_cluster_stranded_memory_bytes Free GPU memory on GPUs where none of the pending sizes fits (else the configured sizes).
# TYPE gpumem_cluster_stranded_memory_bytes gauge
gpumem_cluster_stranded_memory_bytes 0
# HELP gpumem_cluster_fragmentation_blocked_jobs Pending jobs whose partitions have the memory they ask for free in total but on no single GPU.
# TYPE gpumem_cluster_fragmentation_blocked_jobs gauge
gpumem_cluster_fragmentation_blocked_jobs 1
# HELP gpumem_cluster_pending_reason_jobs Pending jobs by Slurm's reason for their wait (Resources, Priority, ReqNodeNotAvail, ...).
# TYPE gpumem_cluster_pending_reason_jobs gauge
gpumem_cluster_pending_reason_jobs{reason="Priority"} 2
gpumem_cluster_pending_reason_jobs{reason="Resources"} 1
# HELP gpumem_partition_memory_allocated_bytes GPU memory Slurm allocated to the partition's running jobs (shards x unit, whole GPUs, MIG instances).
# TYPE gpumem_partition_memory_allocated_bytes gauge
gpumem_partition_memory_allocated_bytes{partition="big"} 4.294967296e+10
gpumem_partition_memory_allocated_bytes{partition="gpu"} 1.4495514624e+11
# HELP gpumem_partition_memory_total_bytes GPU memory of the partition's nodes, from the inventory.
# TYPE gpumem_partition_memory_total_bytes gauge
gpumem_partition_memory_total_bytes{partition="big"} 4.294967296e+10
gpumem_partition_memory_total_bytes{partition="gpu"} 1.7179869184e+11
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpumem_cluster_pending_jobs", "gpumem_cluster_pending_oldest_wait_seconds",
		"gpumem_cluster_free_memory_bytes", "gpumem_cluster_stranded_memory_bytes", "gpumem_cluster_fragmentation_blocked_jobs",
		"gpumem_cluster_pending_reason_jobs", "gpumem_partition_memory_allocated_bytes", "gpumem_partition_memory_total_bytes"); err != nil {
		t.Error(err)
	}
}

// With 3 and 4 GiB jobs pending the free memory can be used; with only a 20 GiB job
// pending, all 25 GiB free are stranded.
func TestStrandedFollowsPendingSizes(t *testing.T) {
	in := cluster()
	in.Pending = in.Pending[:1]
	v, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	if v.Free != 25*gib || v.Stranded != 25*gib {
		t.Errorf("free %d GiB stranded %d GiB; want 25 and 25 (neither GPU holds a 20 GiB job)", v.Free/gib, v.Stranded/gib)
	}
}

func TestNoViewFailsCollectors(t *testing.T) {
	e := NewExporter()
	e.Fail("slurm")
	want := `
# HELP gpumem_cluster_update_errors_total Failed readings of the cluster view, by what failed (slurm, inventory, compute).
# TYPE gpumem_cluster_update_errors_total counter
gpumem_cluster_update_errors_total{source="compute"} 0
gpumem_cluster_update_errors_total{source="inventory"} 0
gpumem_cluster_update_errors_total{source="slurm"} 1
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpumem_cluster_update_errors_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(e, "gpumem_cluster_free_memory_bytes"); n != 0 {
		t.Errorf("%d free-memory series before any view, want none", n)
	}
}

// job_submit's counts file, read and decoded, becomes counters by reason class; a file
// that cannot be read leaves no refusal series and a 0 that says so.
func TestRefusalCounts(t *testing.T) {
	e := NewExporter()
	e.SetRefusals(nil)
	if n := testutil.CollectAndCount(e, "gpumem_refused_jobs_total"); n != 0 {
		t.Errorf("%d refusal series without a counts file; want none", n)
	}
	unread := `
# HELP gpumem_cluster_refusal_counts_readable Whether job_submit's refusal counts file (gpumem.conf RefusalCounts) was read at the last reading (1) or not (0: no gpumem_refused_jobs_total; the exporter's log says why).
# TYPE gpumem_cluster_refusal_counts_readable gauge
gpumem_cluster_refusal_counts_readable 0
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(unread), "gpumem_cluster_refusal_counts_readable"); err != nil {
		t.Error(err)
	}
	s, err := refusalcount.Decode([]byte(`{"version": 1, "since": "2026-12-01T04:00:00Z", "written": "2026-12-01T04:05:00Z",
		"refused": {"no_fit": 3, "invalid_request": 1, "someone's text": 7}}`))
	if err != nil {
		t.Fatal(err)
	}
	e.SetRefusals(&s)
	if problems, err := testutil.CollectAndLint(e); err != nil || len(problems) != 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
	want := `
# HELP gpumem_refused_jobs_total GPU-memory jobs job_submit refused since slurmctld loaded it, by reason class (invalid_request, no_fit, gpumem_unavailable).
# TYPE gpumem_refused_jobs_total counter
gpumem_refused_jobs_total{reason="gpumem_unavailable"} 0
gpumem_refused_jobs_total{reason="invalid_request"} 1
gpumem_refused_jobs_total{reason="no_fit"} 3
# HELP gpumem_refused_jobs_since_timestamp_seconds When job_submit started counting refusals (slurmctld's start or reconfigure): the counters restart from zero then.
# TYPE gpumem_refused_jobs_since_timestamp_seconds gauge
gpumem_refused_jobs_since_timestamp_seconds 1.7960976e+09
# HELP gpumem_cluster_refusal_counts_readable Whether job_submit's refusal counts file (gpumem.conf RefusalCounts) was read at the last reading (1) or not (0: no gpumem_refused_jobs_total; the exporter's log says why).
# TYPE gpumem_cluster_refusal_counts_readable gauge
gpumem_cluster_refusal_counts_readable 1
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpumem_refused_jobs_total",
		"gpumem_refused_jobs_since_timestamp_seconds", "gpumem_cluster_refusal_counts_readable"); err != nil {
		t.Error(err)
	}
	if _, err := refusalcount.Decode([]byte(`{"version": 2, "refused": {}}`)); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("a version 2 file: %v; want it refused by version", err)
	}
}

// A MIG request and a whole-GPU request pend beside the shard jobs: valued by the
// accounting policy's GiB equivalents (a 3g.40gb instance is 40 GiB, an 80 GiB H100 all
// its 80 one-GiB shards), they join the same size classes; an untyped gpu:1 has no one
// size and is left out, as is a shard job (ParsePending's).
func TestMIGAndWholeGPUDemand(t *testing.T) {
	in := cluster()
	for i, typ := range []string{"h100", "h100", "l40s"} {
		in.Inventory.Nodes[i].GPUs[0].Type = typ // as gpumemd writes every GPU
	}
	in.Inventory.Nodes = append(in.Inventory.Nodes,
		inventory.Node{Name: "m", Partitions: []string{"mig"}, GPUs: []inventory.GPU{{Index: 0, Type: "a100", MemoryMiB: 81920, MIG: true,
			Instances: []inventory.MIGInstance{{Profile: "3g.40gb", MemoryMiB: 40192}, {Profile: "3g.40gb", MemoryMiB: 40192}}}}},
		inventory.Node{Name: "w", Partitions: []string{"whole"}, GPUs: []inventory.GPU{{Index: 0, Type: "h100", MemoryMiB: 80 << 10, Sharing: inventory.SharingWhole}}})
	queue := "7|mig|gres/gpu:3g.40gb:1|(null)|1970-01-01T02:45:00\n8|whole|gres/gpu:h100:2|(null)|1970-01-01T02:46:00\n" +
		"9|whole|gres/gpu:1|(null)|1970-01-01T02:46:00\n10|gpu|gres/shard:20|(null)|1970-01-01T02:46:00\n"
	jobs, err := slurmcli.ParsePendingGRES(queue, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if in.GPUPending, err = GPUDemands(jobs, in.Inventory, in.UnitMiB); err != nil {
		t.Fatal(err)
	}
	want := []GPUDemand{{"7", 40 * gib, time.Unix(9900, 0)}, {"8", 160 * gib, time.Unix(9960, 0)}}
	if len(in.GPUPending) != len(want) {
		t.Fatalf("GPU demand %+v; want %+v", in.GPUPending, want)
	}
	for i, g := range in.GPUPending {
		if g.ID != want[i].ID || g.Bytes != want[i].Bytes || !g.Submitted.Equal(want[i].Submitted) {
			t.Errorf("GPU demand %+v; want %+v", g, want[i])
		}
	}
	v, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]Class{
		"4G":   {Jobs: 2, Bytes: 7 * gib},
		"32G":  {Jobs: 1, Bytes: 20 * gib},
		"64G":  {Jobs: 1, Bytes: 40 * gib, OldestWait: 100 * time.Second},
		"256G": {Jobs: 1, Bytes: 160 * gib, OldestWait: 40 * time.Second},
	} {
		c := v.Classes[name]
		if c == nil || c.Jobs != w.Jobs || c.Bytes != w.Bytes || w.OldestWait != 0 && c.OldestWait != w.OldestWait {
			t.Errorf("class %s: %+v; want %d jobs, %d GiB, oldest wait %v", name, c, w.Jobs, w.Bytes/gib, w.OldestWait)
		}
	}
	if v.Blocked != 1 {
		t.Errorf("blocked %d; want still 1: typed-GPU jobs are not shard fragmentation", v.Blocked)
	}
}
