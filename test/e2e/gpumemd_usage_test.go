//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/history/api"
	"github.com/gpumem/gpumem/internal/versioned"
)

// sliceJob is one sbatch job on the L4s whose process the fake NVML reports.
type sliceJob struct {
	id      string
	pid     int
	gpu     int    // index of the GPU Slurm gave it shards of
	out     string // its stdout/stderr file, as the lab sees the path
	usedMiB int
}

// submitSliceJob runs `sleep` with gpu:mem:4g in the inference partition, whose L4s
// are shared by shards (the other nodes would give 4g a MIG instance or whole GPU).
// The sleep claims claimShards in its SLURM_SHARDS_ON_NODE, as any job can: gpumemd
// must go by the 4 shards Slurm gave it.
func submitSliceJob(t *testing.T, g labGres, outDir string, usedMiB, claimShards int) sliceJob {
	t.Helper()
	return submitShardJob(t, g, outDir, "4g", "wrap", usedMiB, claimShards)
}

// submitShardJob is submitSliceJob with the gpu:mem size and the job name given.
func submitShardJob(t *testing.T, g labGres, outDir, size, name string, usedMiB, claimShards int) sliceJob {
	t.Helper()
	// Its own output file (the last --output wins over sbatch's /dev/null), for the
	// warnings gpumemd writes to the job's stderr.
	wrap := fmt.Sprintf("SLURM_SHARDS_ON_NODE=%d sleep 300", claimShards)
	id := sbatch(t, "-p", "inference", "--gres=gpu:mem:"+size, "-J", name, "--wrap", wrap, "--output="+outDir+"/%j.out")
	out := filepath.Join(outDir, id+".out")
	gpu := n3GPU(t, g, id, false)
	pid := jobPIDs(t, id, "sleep")[0]
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if claim := fmt.Sprintf("\x00SLURM_SHARDS_ON_NODE=%d\x00", claimShards); !strings.Contains("\x00"+string(env), claim) {
		t.Fatalf("job %s: process %d does not claim %d shards in its environment", id, pid, claimShards)
	}
	return sliceJob{id: id, pid: pid, gpu: gpu, out: out, usedMiB: usedMiB}
}

// report puts the jobs' processes into the fake NVML file, on their GPUs.
func (s *sidecar) report(t *testing.T, jobs ...sliceJob) {
	t.Helper()
	gpus := s.gpus(t)
	procs := make([][]any, len(gpus))
	for _, j := range jobs {
		procs[j.gpu] = append(procs[j.gpu], map[string]any{"pid": j.pid, "used_mib": j.usedMiB})
	}
	for i, g := range gpus {
		if procs[i] == nil {
			delete(g, "processes")
		} else {
			g["processes"] = procs[i]
		}
	}
	s.write(t)
}

func gibBytes(mib int) string { return strconv.FormatFloat(float64(mib)*(1<<20), 'e', -1, 64) }

// TestGpumemdPoliciesOnSlurmJobs: two real Slurm jobs hold 4 GiB slices of an L4; the
// fake NVML says one uses 3 GiB (within) and the other 6 GiB (over). Each policy acts
// on exactly the job over its slice: record only shows it, warn tells its log and the
// job's stderr, kill ends its process and so the job, and the job within its slice
// runs on through all three. Both jobs lie in their SLURM_SHARDS_ON_NODE (within
// claims 1 shard, over 80), so a gpumemd that believed them would get both wrong.
func TestGpumemdPoliciesOnSlurmJobs(t *testing.T) {
	g, outDir := cleanLab(t, "/tmp/gpumemd-e2e-")
	within := submitSliceJob(t, g, outDir, 3<<10, 1)
	over := submitSliceJob(t, g, outDir, 6<<10, 80)
	s := newSidecar(t, "n3")
	s.report(t, within, over)
	running := func(t *testing.T, j sliceJob) {
		t.Helper()
		if st := showJob(t, g, j.id).state; st != "RUNNING" || !alivePID(j.pid) {
			t.Fatalf("job %s (%d MiB of 4096): state %s, process %d alive %v; want it running\n%s", j.id, j.usedMiB, st, j.pid, alivePID(j.pid), s.log())
		}
	}

	t.Run("record", func(t *testing.T) {
		s.start(t, "--usage-policy", "record")
		var m string
		want := []string{
			fmt.Sprintf(`gpumem_job_memory_used_bytes{jobid="%s"} %s`, within.id, gibBytes(within.usedMiB)),
			fmt.Sprintf(`gpumem_job_memory_allocated_bytes{jobid="%s",kind="shard"} %s`, within.id, gibBytes(4<<10)),
			fmt.Sprintf(`gpumem_job_over_allocation{jobid="%s"} 0`, within.id),
			fmt.Sprintf(`gpumem_job_memory_used_bytes{jobid="%s"} %s`, over.id, gibBytes(over.usedMiB)),
			fmt.Sprintf(`gpumem_job_memory_allocated_bytes{jobid="%s",kind="shard"} %s`, over.id, gibBytes(4<<10)),
			fmt.Sprintf(`gpumem_job_over_allocation{jobid="%s"} 1`, over.id),
		}
		if !eventually(10*time.Second, func() bool {
			m = s.metrics(t)
			for _, w := range want {
				if !strings.Contains(m, w) {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("/metrics lacks one of\n%s\n--- scrape:\n%s\n--- log:\n%s", strings.Join(want, "\n"), m, s.log())
		}
		for _, j := range []sliceJob{within, over} {
			var a api.Job
			if !eventually(5*time.Second, func() bool {
				a = apiJobs(t, s)[j.id]
				return a.Kind == "shard" && a.AllocBytes == 4<<30 && a.PeakBytes == int64(j.usedMiB)<<20 && a.Running
			}) {
				t.Errorf("/api/jobs: job %s = %+v; want a running shard job, 4 GiB allocated, %d MiB peak", j.id, a, j.usedMiB)
			}
		}
		time.Sleep(3 * time.Second) // past any grace: record never acts
		running(t, within)
		running(t, over)
		if log := s.log(); strings.Contains(log, "alloc_source=environment") {
			t.Errorf("an allocation was taken from a job's environment while Slurm answers:\n%s", log)
		}
		if m := s.metrics(t); !strings.Contains(m, `gpumem_enforcement_actions_total{action="warn"} 0`) ||
			!strings.Contains(m, `gpumem_enforcement_actions_total{action="kill"} 0`) {
			t.Errorf("record took an action:\n%s", m)
		}
	})

	t.Run("warn", func(t *testing.T) {
		s.start(t, "--usage-policy", "warn", "--usage-notify")
		if !eventually(10*time.Second, func() bool {
			return strings.Contains(s.metrics(t), `gpumem_enforcement_actions_total{action="warn"} 1`)
		}) {
			t.Fatalf("no warning counted within 10s\n%s", s.log())
		}
		log := s.log()
		if !strings.Contains(log, "job="+over.id+" action=warn") || strings.Contains(log, "job="+within.id+" ") {
			t.Errorf("log should warn about job %s only:\n%s", over.id, log)
		}
		var told []byte
		if !eventually(5*time.Second, func() bool {
			told, _ = os.ReadFile(hostPath(over.out))
			return strings.Contains(string(told), "gpumem: job "+over.id)
		}) {
			t.Errorf("job %s's stderr (%s) has no gpumem warning: %q", over.id, over.out, told)
		}
		t.Logf("job %s's stderr: %s", over.id, strings.TrimSpace(string(told)))
		if b, _ := os.ReadFile(hostPath(within.out)); len(b) > 0 {
			t.Errorf("job %s within its slice was told %q", within.id, b)
		}
		running(t, within)
		running(t, over)
	})

	t.Run("kill", func(t *testing.T) {
		s.start(t, "--usage-policy", "kill", "--usage-grace", "2s")
		var st string
		if !eventually(15*time.Second, func() bool {
			st = jobState(t, over.id)
			return st != "RUNNING" && st != "COMPLETING" && !alivePID(over.pid)
		}) {
			t.Fatalf("job %s over its slice: state %q, process alive %v after 15s\n%s", over.id, st, alivePID(over.pid), s.log())
		}
		if !strings.Contains(s.metrics(t), `gpumem_enforcement_actions_total{action="kill"} 1`) {
			t.Errorf("kill not counted\n%s", s.log())
		}
		t.Logf("job %s over its slice: process %d killed, Slurm state now %q", over.id, over.pid, st)
		time.Sleep(3 * time.Second) // more polls past the grace: within stays
		running(t, within)
	})
}

// jobState is the job's JobState, or "PURGED" once slurmctld has forgotten it
// (MinJobAge), which also means it ended.
func jobState(t *testing.T, id string) string {
	t.Helper()
	r := slurm(t, 30*time.Second, "", "scontrol", "show", "job", id)
	if r.code != 0 {
		return "PURGED"
	}
	if m := fieldRE("JobState").FindStringSubmatch(r.out); m != nil {
		return m[1]
	}
	return ""
}

// apiJobs reads /api/jobs as gpumemctl jobs does.
func apiJobs(t *testing.T, s *sidecar) map[string]api.Job {
	t.Helper()
	body, err := get(s.base + "/api/jobs")
	if err != nil {
		t.Fatal(err)
	}
	var list api.JobList
	if err := versioned.Strict([]byte(body), &list); err != nil {
		t.Fatalf("/api/jobs: %v: %q", err, body)
	}
	if list.Version != api.Version {
		t.Fatalf("/api/jobs: version %d, want %d: %q", list.Version, api.Version, body)
	}
	m := map[string]api.Job{}
	for _, j := range list.Jobs {
		m[j.ID] = j
	}
	return m
}
