package metrics

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/gpumem/gpumem/internal/health"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/usage"
)

const gib = 1 << 30

func TestFragmented(t *testing.T) {
	sizes := []uint64{10 * gib, 20 * gib, 40 * gib}
	for _, c := range []struct {
		avail uint64
		sizes []uint64
		want  uint64
	}{
		{35 * gib, sizes, 5 * gib},
		{9 * gib, sizes, 9 * gib},
		{80 * gib, sizes, 0},
		{79 * gib, []uint64{20 * gib, 30 * gib}, 9 * gib}, // 20+20+30 = 70 is the most that fits
		{13 * gib, []uint64{5 * gib, 8 * gib}, 0},
		{12 * gib, []uint64{5 * gib, 8 * gib}, 2 * gib},
		{7 * gib, nil, 0},
		{1 << 50, []uint64{3 * gib, 5 * gib}, 1<<50 - (1<<50/gib)*gib},
	} {
		if got := Fragmented(c.avail, c.sizes); got != c.want {
			t.Errorf("Fragmented(%d GiB, %v) = %d GiB, want %d GiB", c.avail/gib, c.sizes, got/gib, c.want/gib)
		}
	}
}

func pollState() *State {
	nan := math.NaN()
	return &State{
		Node:   "g1",
		Polled: true,
		Snapshot: usage.Snapshot{Time: time.Unix(1090, 0), GPUs: []usage.GPU{
			{Index: 0, UUID: "GPU-0", Name: "NVIDIA H100 80GB HBM3", Total: 80 * gib, Used: 35 * gib, Free: 45 * gib, TempC: 40, PowerW: 310.5, UtilPct: 55},
			{Index: 1, UUID: "GPU-1", Name: "NVIDIA H100 80GB HBM3", Total: 80 * gib, Free: 80 * gib, TempC: nan, PowerW: nan, UtilPct: nan},
			{Index: 2, UUID: "GPU-2", Name: "NVIDIA H100 80GB HBM3", Total: 80 * gib, MIG: true, Instances: []usage.Instance{{GI: 1, Profile: "3g.40gb", Total: 40 * gib}, {GI: 2, Profile: "1g.10gb", Total: 10 * gib, Start: 6}},
				Procs: []usage.Proc{{PID: 7, Used: 10 * gib, GI: 1}, {PID: 8, GI: 1, Unknown: true}}, TempC: 30, PowerW: nan, UtilPct: nan},
		}},
		Jobs: []usage.Job{
			{ID: "41", Meta: slurmcli.Meta{User: "ana", Account: "physics", Partition: "gpu"}, Kind: usage.KindShard, Alloc: 25 * gib, Used: 28 * gib, GPUs: []usage.JobGPU{{GPU: 0, Used: 28 * gib, Alloc: 25 * gib, PIDs: []int{9}}}},
			{ID: "42", Kind: usage.KindMIG, Alloc: 40 * gib, Used: 10 * gib, GPUs: []usage.JobGPU{{GPU: 2, Used: 10 * gib, Alloc: 40 * gib}}},
		},
		// Job 43 holds 8 GiB of GPU 1 with no process there, idle for 90s.
		Idle: []usage.IdleJob{{ID: "43", Meta: slurmcli.Meta{User: "bo", Account: "bio", Partition: "gpu"}, Alloc: 8 * gib, GPUs: []int{1},
			Since: time.Unix(1000, 0)}},
		IdleActions:      map[string]uint64{"warn": 1},
		Unattributed:     map[int]uint64{0: 2 * gib},
		Health:           health.Status{Healthy: true},
		XIDs:             map[[2]int]uint64{{1, 43}: 2},
		Actions:          map[string]uint64{"warn": 1},
		Polls:            12,
		PollErrors:       map[string]uint64{"history": 1},
		PollDuration:     3 * time.Millisecond,
		FragSizes:        []uint64{10 * gib, 20 * gib},
		UnknownAllocJobs: 2,
		Orphans:          3,
		UnknownSizes:     4,
		Strays:           5,
	}
}

func TestLintAndValues(t *testing.T) {
	e := NewExporter()
	e.Set(pollState())
	problems, err := testutil.CollectAndLint(e)
	if problems = lintProblems(problems); err != nil || len(problems) != 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
	want := `
# HELP gpumem_node_available_memory_bytes GPU memory of shared GPUs neither allocated to jobs nor in use.
# TYPE gpumem_node_available_memory_bytes gauge
gpumem_node_available_memory_bytes 1.25627793408e+11
# HELP gpumem_node_fragmented_memory_bytes Available GPU memory that no configured request size can use, summed over shared GPUs.
# TYPE gpumem_node_fragmented_memory_bytes gauge
gpumem_node_fragmented_memory_bytes 7.516192768e+09
# HELP gpumem_job_over_allocation 1 when the job holds more GPU memory than it was allocated.
# TYPE gpumem_job_over_allocation gauge
gpumem_job_over_allocation{Hostname="g1",account="physics",jobid="41",partition="gpu",user="ana"} 1
gpumem_job_over_allocation{Hostname="g1",account="",jobid="42",partition="",user=""} 0
# HELP gpumem_sidecar_unknown_allocation_jobs_total Jobs since start that Slurm runs on this node but whose allocation could not be read from Slurm; they are measured and never acted on.
# TYPE gpumem_sidecar_unknown_allocation_jobs_total counter
gpumem_sidecar_unknown_allocation_jobs_total 2
# HELP gpumem_sidecar_orphan_processes_total GPU processes found since start that outlived their Slurm job; counted as no job's, never killed.
# TYPE gpumem_sidecar_orphan_processes_total counter
gpumem_sidecar_orphan_processes_total 3
# HELP gpumem_sidecar_unknown_size_processes_total GPU processes found since start whose memory NVML did not report (or reported past the GPU's total); counted as no size, never acted on.
# TYPE gpumem_sidecar_unknown_size_processes_total counter
gpumem_sidecar_unknown_size_processes_total 4
# HELP gpumem_sidecar_stray_jobs_total Jobs found since start holding memory on a GPU Slurm did not give them (their own violation, per UsagePolicy).
# TYPE gpumem_sidecar_stray_jobs_total counter
gpumem_sidecar_stray_jobs_total 5
# HELP gpumem_job_idle_seconds How long the job has held GPU memory on this node with no GPU process (or under the utilisation threshold); exempt says why no policy acts on it (empty when one may).
# TYPE gpumem_job_idle_seconds gauge
gpumem_job_idle_seconds{Hostname="g1",account="bio",exempt="",jobid="43",partition="gpu",user="bo"} 90
# HELP gpumem_node_idle_memory_bytes GPU memory Slurm allocated to jobs that leave it idle.
# TYPE gpumem_node_idle_memory_bytes gauge
gpumem_node_idle_memory_bytes 8.589934592e+09
`
	// GPU 0: 80 - max(25 allocated, 35 used) = 45 GiB, of which 5 GiB no 10 or 20 GiB
	// request can use; GPU 1: 80 - 8 held by idle job 43 = 72 GiB, 2 of them unusable;
	// MIG GPU 2 left out.
	if err := testutil.CollectAndCompare(e, strings.NewReader(want),
		"gpumem_node_available_memory_bytes", "gpumem_node_fragmented_memory_bytes", "gpumem_job_over_allocation",
		"gpumem_sidecar_unknown_allocation_jobs_total", "gpumem_sidecar_orphan_processes_total",
		"gpumem_sidecar_unknown_size_processes_total", "gpumem_sidecar_stray_jobs_total", "gpumem_job_idle_seconds", "gpumem_node_idle_memory_bytes"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(e, "gpumem_gpu_temperature_celsius"); n != 2 {
		t.Fatalf("%d temperature series, want 2 (GPU 1 did not report one)", n)
	}
}

func TestFailedPollMarksCollectorsFailed(t *testing.T) {
	e := NewExporter()
	e.Set(&State{Polled: true, SampleErr: errors.New("nvml: device count: Unknown Error")})
	want := `
# HELP gpumem_scrape_collector_success Whether a collector succeeded (1) or failed (0) in this scrape.
# TYPE gpumem_scrape_collector_success gauge
gpumem_scrape_collector_success{collector="faults"} 1
gpumem_scrape_collector_success{collector="gpu"} 0
gpumem_scrape_collector_success{collector="idle"} 0
gpumem_scrape_collector_success{collector="job"} 1
gpumem_scrape_collector_success{collector="node"} 0
gpumem_scrape_collector_success{collector="sidecar"} 1
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpumem_scrape_collector_success"); err != nil {
		t.Fatal(err)
	}
}

// TestFaultSeries: what gpumemd could not do shows per duty, with the damaged histories
// it set aside and the warnings it dropped; a fresh exporter reports zeros, not nothing.
func TestFaultSeries(t *testing.T) {
	e := NewExporter()
	e.Set(&State{Polled: true, DutyUp: map[string]bool{"listen": false, "history": true},
		DutyFailures: map[string]uint64{"listen": 4}, HistorySetAside: 1, WarningsDropped: 7})
	want := `
# HELP gpumem_sidecar_duty_up 1 while gpumemd can do the duty (listen: serve /metrics and /api; nvml: read the GPUs; history: keep the job history), 0 while it retries; a duty that is off counts as up.
# TYPE gpumem_sidecar_duty_up gauge
gpumem_sidecar_duty_up{duty="history"} 1
gpumem_sidecar_duty_up{duty="listen"} 0
# HELP gpumem_sidecar_duty_failures_total Failed attempts at the duty since gpumemd started (a port held by another process, a history that cannot be opened, ...).
# TYPE gpumem_sidecar_duty_failures_total counter
gpumem_sidecar_duty_failures_total{duty="history"} 0
gpumem_sidecar_duty_failures_total{duty="listen"} 4
# HELP gpumem_sidecar_history_set_aside_total Damaged history databases gpumemd renamed aside (PATH.corrupt-TIME) and replaced with a new one since it started.
# TYPE gpumem_sidecar_history_set_aside_total counter
gpumem_sidecar_history_set_aside_total 1
# HELP gpumem_sidecar_warnings_dropped_total Warnings to jobs (scontrol notify) dropped since start because the queue of warnings was full.
# TYPE gpumem_sidecar_warnings_dropped_total counter
gpumem_sidecar_warnings_dropped_total 7
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpumem_sidecar_duty_up", "gpumem_sidecar_duty_failures_total",
		"gpumem_sidecar_history_set_aside_total", "gpumem_sidecar_warnings_dropped_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(NewExporter(), "gpumem_sidecar_warnings_dropped_total"); n != 1 {
		t.Errorf("a fresh exporter has %d warnings_dropped series, want 1", n)
	}
}

// TestScrapeOverHTTPPassesPromtool scrapes a real listener on 127.0.0.1 and, where
// promtool is installed (Debian package prometheus, or $PROMTOOL), runs
// `promtool check metrics` on what came back.
func TestScrapeOverHTTPPassesPromtool(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	e := NewExporter()
	e.Set(pollState())
	reg.MustRegister(e)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// dcgm-exporter's labels; GPU 1 serves idle job 43, GPU 2 job 42 through a MIG instance.
	for _, want := range []string{
		`gpumem_gpu_memory_used_bytes{Hostname="g1",UUID="GPU-0",gpu="0",hpc_job="41",modelName="NVIDIA H100 80GB HBM3"} 3.758096384e+10`,
		`gpumem_gpu_memory_used_bytes{Hostname="g1",UUID="GPU-1",gpu="1",hpc_job="43",modelName="NVIDIA H100 80GB HBM3"} 0`,
		`gpumem_gpu_memory_allocated_bytes{Hostname="g1",UUID="GPU-1",gpu="1",hpc_job="43",modelName="NVIDIA H100 80GB HBM3"} 8.589934592e+09`,
		`gpumem_gpu_memory_allocated_bytes{Hostname="g1",UUID="GPU-2",gpu="2",hpc_job="42",modelName="NVIDIA H100 80GB HBM3"} 4.294967296e+10`,
		`gpumem_gpu_xid_errors_total{Hostname="g1",gpu="1",xid="43"} 2`,
		// Job series join DCGM's on Hostname, and per GPU on gpu and UUID too.
		`gpumem_job_memory_used_bytes{Hostname="g1",account="physics",jobid="41",partition="gpu",user="ana"} 3.0064771072e+10`,
		`gpumem_job_gpu_memory_used_bytes{Hostname="g1",UUID="GPU-0",account="physics",gpu="0",jobid="41",partition="gpu",user="ana"} 3.0064771072e+10`,
		// Each MIG instance, as dcgm-exporter labels it: the known 10 GiB on GI 1 (the
		// process of unknown size adds nothing), none on GI 2.
		`gpumem_mig_memory_total_bytes{GPU_I_ID="1",GPU_I_PROFILE="3g.40gb",Hostname="g1",UUID="GPU-2",gpu="2",modelName="NVIDIA H100 80GB HBM3"} 4.294967296e+10`,
		`gpumem_mig_memory_used_bytes{GPU_I_ID="1",GPU_I_PROFILE="3g.40gb",Hostname="g1",UUID="GPU-2",gpu="2",modelName="NVIDIA H100 80GB HBM3"} 1.073741824e+10`,
		`gpumem_mig_memory_total_bytes{GPU_I_ID="2",GPU_I_PROFILE="1g.10gb",Hostname="g1",UUID="GPU-2",gpu="2",modelName="NVIDIA H100 80GB HBM3"} 1.073741824e+10`,
		`gpumem_mig_memory_used_bytes{GPU_I_ID="2",GPU_I_PROFILE="1g.10gb",Hostname="g1",UUID="GPU-2",gpu="2",modelName="NVIDIA H100 80GB HBM3"} 0`,
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: %d\n%s", resp.StatusCode, body)
	}
	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		promtool, _ = exec.LookPath("promtool")
	}
	if promtool == "" {
		// The scrape's content is checked above; its lint by promtool is not, so the
		// test says SKIP rather than PASS.
		t.Skip("promtool not installed (apt-get install prometheus, or set PROMTOOL): promtool check metrics not run")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	var left []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && !dcgmCamelCase(strings.Fields(l)[0], l) {
			left = append(left, l)
		}
	}
	if len(left) > 0 || (err != nil && len(out) == 0) {
		t.Fatalf("promtool check metrics: %v\n%s", err, strings.Join(left, "\n"))
	}
}

// dcgmCamelCase is the one lint gpumem accepts: GPU and MIG series carry dcgm-exporter's
// label names (UUID, modelName, Hostname), which are not snake_case, so that they join
// with a site's DCGM series as they are.
func dcgmCamelCase(metric, text string) bool {
	return (strings.HasPrefix(metric, "gpumem_gpu_") || strings.HasPrefix(metric, "gpumem_mig_")) && strings.Contains(text, "not 'camelCase'")
}

func lintProblems(ps []promlint.Problem) []promlint.Problem {
	var out []promlint.Problem
	for _, p := range ps {
		if !dcgmCamelCase(p.Metric, p.Text) {
			out = append(out, p)
		}
	}
	return out
}
