//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/jobsummary"
)

// userShardJob is submitShardJob as the lab's unprivileged user: a sleep holding a
// gpu:mem:4g slice of one of n3's L4s.
func userShardJob(t *testing.T, g labGres, outDir string, usedMiB int) sliceJob {
	t.Helper()
	r := slurm(t, 30*time.Second, "", "runuser", "-u", labUser, "--", "sbatch", "--parsable", "-p", "inference",
		"--gres=gpu:mem:4g", "--output=/dev/null", "--wrap", "sleep 300")
	if r.code != 0 {
		t.Fatalf("sbatch as %s: %s", labUser, r)
	}
	id := strings.TrimSpace(strings.Split(r.out, ";")[0])
	gpu := n3GPU(t, g, id, false)
	return sliceJob{id: id, pid: jobPIDs(t, id, "sleep")[0], gpu: gpu, usedMiB: usedMiB}
}

// stop ends the sidecar's gpumemd and waits for it.
func (s *sidecar) stop(t *testing.T) {
	t.Helper()
	s.proc.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("gpumemd did not stop within 15s of SIGTERM\n%s", s.log())
	}
}

// summaryWritten waits until gpumemd logs that it wrote job id's summary.
func (s *sidecar) summaryWritten(t *testing.T, id string) {
	t.Helper()
	if !eventually(90*time.Second, func() bool {
		for _, l := range strings.Split(s.log(), "\n") {
			if strings.Contains(l, "job summary written") && strings.Contains(l, "job="+id+" ") {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("job %s: no summary written within 90s\n%s", id, s.log())
	}
}

// usedAsUser runs gpumemctl used with args, its sacct run as the lab's user: what that
// user reads of their own jobs, with gpumemd stopped.
func usedAsUser(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	sacct := filepath.Join(dir, "sacct")
	chroot := ""
	if root != "" {
		chroot = "chroot " + root + " "
	}
	if err := os.WriteFile(sacct, []byte("#!/bin/sh\nexec "+chroot+"runuser -u "+labUser+" -- sacct \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin, _ := filepath.Abs(filepath.Join("..", "..", "bin", "gpumemctl"))
	out, err := exec.Command(bin, append([]string{"used", "--sacct", sacct}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("gpumemctl used %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestJobSummaryInAccounting: three jobs of an ordinary user hold 4 GiB slices of n3's
// L4s; the fake NVML says one uses 3 GiB (within), one 6 GiB (over, warned) and, under
// the kill policy, one 6 GiB (warned, then killed). Each ends; gpumemd writes what each
// used into its AdminComment; then gpumemd is stopped, and the user reads each summary
// back through sacct with gpumemctl used. The admins' note set on one job while it
// ran is still there, before gpumem's. An array's two tasks, measured beside them,
// each get their own summary in their own record.
func TestJobSummaryInAccounting(t *testing.T) {
	ensureLabUser(t)
	cleanAll(t)
	t.Cleanup(func() { cleanAll(t) })
	g, outDir := cleanLab(t, "/tmp/gpumemd-summary-")
	within := userShardJob(t, g, outDir, 3<<10)
	over := userShardJob(t, g, outDir, 6<<10)
	note := "checked by the admins"
	ok(t, "scontrol", "update", "JobId="+within.id, "AdminComment="+note)
	// An array's two tasks: each task's summary goes to that task's record, not to
	// every task of the array (sacctmgr's jobid=MASTER would name them all).
	r := slurm(t, 30*time.Second, "", "runuser", "-u", labUser, "--", "sbatch", "--parsable", "-p", "inference",
		"--gres=gpu:mem:4g", "--output=/dev/null", "--array=0-1", "--wrap", "sleep 300")
	if r.code != 0 {
		t.Fatalf("sbatch --array as %s: %s", labUser, r)
	}
	master := strings.TrimSpace(strings.Split(r.out, ";")[0])
	var tasks []sliceJob
	taskIDs(t, master, 2) // both running
	for i := range 2 {
		task := fmt.Sprintf("%s_%d", master, i)
		gpu := n3GPU(t, g, task, false)
		id := strings.TrimSpace(ok(t, "squeue", "-h", "-j", task, "-o", "%A"))
		tasks = append(tasks, sliceJob{id: id, pid: jobPIDs(t, id, "sleep")[0], gpu: gpu, usedMiB: (i + 1) << 10})
	}
	s := newSidecar(t, "n3")
	// The job over its slice starts within it, goes over, and comes back: one-second
	// history buckets keep that shape in its summary's memory over time.
	overRun := over
	overRun.usedMiB = 2 << 10
	s.report(t, within, overRun, tasks[0], tasks[1])
	s.start(t, "--usage-policy", "warn", "--usage-notify", "--history-bucket", "1s")
	time.Sleep(2 * time.Second)
	s.report(t, within, over, tasks[0], tasks[1])
	if !eventually(15*time.Second, func() bool {
		return strings.Contains(s.metrics(t), `gpumem_enforcement_actions_total{action="warn"} 1`)
	}) {
		t.Fatalf("no warning counted within 15s\n%s", s.log())
	}
	time.Sleep(2 * time.Second) // a few polls over its slice
	overRun.usedMiB = 3 << 10
	s.report(t, within, overRun, tasks[0], tasks[1])
	time.Sleep(2 * time.Second)
	ok(t, "scancel", within.id, over.id, master)
	for _, j := range append([]sliceJob{within, over}, tasks...) {
		s.summaryWritten(t, j.id)
	}
	s.stop(t)

	killed := userShardJob(t, g, outDir, 6<<10)
	s.report(t, killed)
	s.start(t, "--usage-policy", "kill", "--usage-grace", "2s")
	s.summaryWritten(t, killed.id)
	s.stop(t)

	var doc struct {
		Version int
		Jobs    []struct {
			ID        string               `json:"job_id"`
			State     string               `json:"state"`
			Summaries []jobsummary.Summary `json:"summaries"`
			FitMiB    int64                `json:"fit_mib"`
		}
	}
	out := usedAsUser(t, "-o", "json", within.id, over.id, killed.id)
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Version != 1 || len(doc.Jobs) != 3 {
		t.Fatalf("gpumemctl used -o json: %v\n%s", err, out)
	}
	for i, want := range []struct {
		j               sliceJob
		warnings, kills int
		over            bool
		fitMiB          int64
	}{{within, 0, 0, false, 3 << 10}, {over, 1, 0, true, 6 << 10}, {killed, 1, 1, true, 6 << 10}} {
		got := doc.Jobs[i]
		if got.ID != want.j.id || len(got.Summaries) != 1 {
			t.Errorf("job %s: %+v; want one summary", want.j.id, got)
			continue
		}
		sum := got.Summaries[0]
		if sum.Node != "n3" || sum.Kind != "shard" || len(sum.GPUs) != 1 || sum.GPUs[0].Index != want.j.gpu ||
			sum.GPUs[0].SliceMiB != 4<<10 || sum.GPUs[0].PeakMiB != int64(want.j.usedMiB) ||
			sum.Warnings != want.warnings || sum.Kills != want.kills || (sum.OverSeconds > 0) != want.over || got.FitMiB != want.fitMiB {
			t.Errorf("job %s (%d MiB of 4 GiB on GPU %d): summary %+v, fit %d MiB; want %d warnings, %d kills, over %v, fit %d MiB",
				want.j.id, want.j.usedMiB, want.j.gpu, sum, got.FitMiB, want.warnings, want.kills, want.over, want.fitMiB)
		}
	}
	var arr struct {
		Jobs []struct {
			ID        string               `json:"job_id"`
			Summaries []jobsummary.Summary `json:"summaries"`
		}
	}
	out = usedAsUser(t, "-o", "json", master)
	if err := json.Unmarshal([]byte(out), &arr); err != nil || len(arr.Jobs) != 2 {
		t.Fatalf("gpumemctl used %s (the array): %v\n%s", master, err, out)
	}
	for i, j := range arr.Jobs {
		want := fmt.Sprintf("%s_%d", master, i)
		if j.ID != want || len(j.Summaries) != 1 || len(j.Summaries[0].GPUs) != 1 || j.Summaries[0].GPUs[0].PeakMiB != int64(i+1)<<10 {
			t.Errorf("array task %s: %+v; want its own summary, peak %d GiB", want, j, i+1)
		}
	}
	t.Logf("gpumemctl used %s, as %s:\n%s", over.id, labUser, usedAsUser(t, over.id))
	text := usedAsUser(t, within.id)
	t.Logf("gpumemctl used %s, as %s:\n%s", within.id, labUser, text)
	for _, w := range []string{"Job ID: " + within.id, "GPU memory on n3: a slice (shards) of a shared GPU",
		fmt.Sprintf("GPU %d: peak 3 GiB of its 4 GiB (75%%)", within.gpu), "Would have fit in: --gres=gpu:mem:3g"} {
		if !strings.Contains(text, w) {
			t.Errorf("gpumemctl used %s lacks %q", within.id, w)
		}
	}
	r = slurm(t, 30*time.Second, "", "sacct", "-j", within.id, "-X", "-n", "-P", "-o", "AdminComment")
	if c := strings.TrimSpace(r.out); !strings.HasPrefix(c, note+" gpumem/1;node=n3;") {
		t.Errorf("job %s's AdminComment %q: want the admins' note kept, then gpumem's summary", within.id, c)
	}
}

// TestFaultDbdDownDuringSummary: slurmdbd is killed (SIGKILL) while a gpu:mem job runs;
// the job ends and gpumemd cannot write its summary; slurmdbd starts again and the
// summary is written at gpumemd's next try (30 s after the first), and reads back
// through sacct. A row of the fault matrix (test/faults.sh).
func TestFaultDbdDownDuringSummary(t *testing.T) {
	faultMatrixOnly(t) // 40 s, most of it gpumemd's first wait before it tries again
	ensureLabUser(t)
	cleanAll(t)
	t.Cleanup(func() { cleanAll(t) })
	g, outDir := cleanLab(t, "/tmp/gpumemd-summary-dbd-")
	j := userShardJob(t, g, outDir, 2<<10)
	s := newSidecar(t, "n3")
	s.report(t, j)
	s.start(t)
	startDbd := killDbd(t)
	ok(t, "scancel", j.id)
	if !eventually(30*time.Second, func() bool {
		return strings.Contains(s.log(), "job summary: will try again") && strings.Contains(s.log(), "job="+j.id)
	}) {
		t.Fatalf("job %s: no failed try logged within 30s of its end with slurmdbd down\n%s", j.id, s.log())
	}
	if strings.Contains(s.log(), "job summary written") {
		t.Fatalf("a summary was written while slurmdbd was down\n%s", s.log())
	}
	startDbd()
	s.summaryWritten(t, j.id)
	s.stop(t)
	out := usedAsUser(t, j.id)
	if !strings.Contains(out, "GPU memory on n3: a slice (shards) of a shared GPU") || !strings.Contains(out, "peak 2 GiB of its 4 GiB") {
		t.Errorf("gpumemctl used %s after slurmdbd's outage:\n%s", j.id, out)
	}
	t.Logf("gpumemctl used %s, written after slurmdbd came back:\n%s", j.id, out)
}
