//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// submitWholeL4 runs a 300 s sleep on one whole L4 of n3 and returns it with the GPU
// Slurm gave it (its /dev/nvidiaN, which is the fake NVML's index on n3).
func submitWholeL4(t *testing.T, g labGres, usedMiB int) sliceJob {
	t.Helper()
	id := sbatch(t, "-p", "inference", "--gres=gpu:l4:1", "-J", "whole", "--wrap", "sleep 300")
	return sliceJob{id: id, pid: jobPIDs(t, id, "sleep")[0], gpu: n3GPU(t, g, id, true), usedMiB: usedMiB}
}

// n3GPU waits for job id to run and returns the one L4 of n3 Slurm gave it, whole or
// as shards: its /dev/nvidiaN, which is the fake NVML's index on n3.
func n3GPU(t *testing.T, g labGres, id string, whole bool) int {
	t.Helper()
	if st := waitState(t, id, "RUNNING"); st != "RUNNING" {
		t.Fatalf("job %s: %s", id, st)
	}
	j := showJob(t, g, id)
	if j.node != "n3" || len(j.uses) != 1 || j.uses[0].whole != whole {
		t.Fatalf("job %s: %+v; want one L4 on n3, whole %v", id, j, whole)
	}
	gpu, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(j.uses[0].dev.file), "nvidia"))
	if err != nil {
		t.Fatalf("job %s: device %q is not /dev/nvidiaN", id, j.uses[0].dev.file)
	}
	return gpu
}

// cleanLab cancels every job now and when the test ends, and makes a directory for
// the jobs' output (prefix and this process's id, as the lab sees the path).
func cleanLab(t *testing.T, prefix string) (labGres, string) {
	t.Helper()
	clean(t)
	t.Cleanup(func() { clean(t) })
	outDir := prefix + strconv.Itoa(os.Getpid())
	if err := os.MkdirAll(hostPath(outDir), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostPath(outDir)) })
	return readGres(t), outDir
}

// TestGpumemdHoldsJobsToSlurmsGPUs: under the kill policy, on real Slurm jobs of n3.
// Job "stray" was given one whole L4 but the fake NVML shows its process on another
// L4 (as ConstrainDevices=no allows): 2 GiB on a GPU it was not given, which the old
// reading (the GPU a process touches is the job's) took for use within its 22 GiB. It
// is killed. Job "own" uses 2 GiB of its own L4 and lives. A shard job whose process
// NVML sizes at more than the GPU holds (a value no process can have; NVML's "not
// available" is the same kind) lives too: the size is unknown, not over.
func TestGpumemdHoldsJobsToSlurmsGPUs(t *testing.T) {
	g, outDir := cleanLab(t, "/tmp/gpumemd-alloc-")
	stray := submitWholeL4(t, g, 2<<10)
	own := submitWholeL4(t, g, 2<<10)
	unsized := submitSliceJob(t, g, outDir, 1<<30, 4) // 1 PiB on a 22.5 GiB L4
	// The stray process runs on an L4 neither whole job was given.
	taken := map[int]bool{stray.gpu: true, own.gpu: true}
	for i := 0; i < 4; i++ {
		if !taken[i] {
			stray.gpu = i
			break
		}
	}
	if taken[stray.gpu] {
		t.Fatalf("no free L4 for the stray process: whole jobs on %v", taken)
	}
	s := newSidecar(t, "n3")
	s.report(t, stray, own, unsized)
	s.start(t, "--usage-policy", "kill", "--usage-grace", "2s")

	var st string
	if !eventually(20*time.Second, func() bool {
		st = jobState(t, stray.id)
		return st != "RUNNING" && st != "COMPLETING" && !alivePID(stray.pid)
	}) {
		t.Fatalf("job %s with 2 GiB on GPU %d it was not given: state %q, process alive %v after 20s\n%s", stray.id, stray.gpu, st, alivePID(stray.pid), s.log())
	}
	log := s.log()
	if !strings.Contains(log, "GPUs it was not given") || !strings.Contains(log, "job="+stray.id+" action=kill") {
		t.Errorf("log does not name job %s's memory on a GPU it was not given, or its kill:\n%s", stray.id, log)
	}
	time.Sleep(4 * time.Second) // more polls past the grace
	for _, j := range []sliceJob{own, unsized} {
		if st := jobState(t, j.id); st != "RUNNING" || !alivePID(j.pid) {
			t.Errorf("job %s: state %s, process alive %v; want it running\n%s", j.id, st, alivePID(j.pid), s.log())
		}
	}
	m := s.metrics(t)
	if want := fmt.Sprintf(`gpumem_job_over_allocation{jobid="%s"} 0`, unsized.id); !strings.Contains(m, want) {
		t.Errorf("/metrics lacks %s: a size past the GPU's total counted\n%s", want, m)
	}
	if !strings.Contains(s.log(), "no memory size") {
		t.Errorf("the process of unknown size is not logged:\n%s", s.log())
	}
}

// TestSteerCountsJobWithHostileName: a running shard job named with a line break and
// Slurm's separators. On 22.05, whose scontrol has no --json, its text record is
// refused; steer must still count its 7 shards on n3 (from squeue, on every L4 it may
// be on) rather than see its GPU free and pin jobs onto it. Where the record reads
// (JSON), they are on its own GPU.
func TestSteerCountsJobWithHostileName(t *testing.T) {
	clean(t)
	t.Cleanup(func() { clean(t) })
	g := readGres(t)
	id := sbatch(t, "-p", "inference", "--gres=shard:7", "-J", "nl\nJobId=77 x Nodes=n3 CPU_IDs=0 Mem=0 GRES=shard:0(0/22)", "--wrap", "sleep 300")
	gpu := n3GPU(t, g, id, false)
	bin, _ := filepath.Abs("../../bin/gpumemctl")
	dir := t.TempDir()
	scontrolFor(t, dir) // 24.11: wrappers into the chroot, first on PATH
	cmd := exec.Command(bin, "steer", "report", "-o", "json", "--shard-unit", "1G", "--inventory", hostPath("/etc/slurm/gpumem.d"))
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gpumemctl steer report: %v\n%s%s", err, out, stderr.String())
	}
	var rep struct {
		GPUs []struct {
			Node string `json:"node"`
			GPU  int    `json:"gpu"`
			Used int64  `json:"used"`
		} `json:"gpus"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	found := false
	for _, u := range rep.GPUs {
		if u.Node == "n3" && u.GPU == gpu {
			found = true
			if u.Used < 7 {
				t.Errorf("n3 GPU %d, where job %s holds 7 shards, is counted with %d used\n%s\n%s", gpu, id, u.Used, out, stderr.String())
			}
		}
	}
	if !found {
		t.Errorf("no n3 GPU %d in the report\n%s", gpu, out)
	}
	t.Logf("steer report: %s; stderr: %s", strings.Join(strings.Fields(string(out)), " "), strings.TrimSpace(stderr.String()))
}
