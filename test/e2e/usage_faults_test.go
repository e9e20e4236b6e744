//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/history/api"
)

// heldScontrol writes an scontrol for gpumemd into dir (with squeue and scancel beside
// it, the lab's own) whose `scontrol listpids JOB NODE` for one job, the question the
// kill asks last before it signals, touches dir/held and waits while dir/hold exists.
// `listpids * NODE` (which job each GPU process is in) is never held.
func heldScontrol(t *testing.T, dir string) string {
	t.Helper()
	real := func(name string) string {
		if root != "" {
			return "chroot " + root + " " + name
		}
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, name := range []string{"squeue", "scancel"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexec "+real(name)+" \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf(`#!/bin/sh
D=%s
if [ "$1" = listpids ] && [ "$2" != "*" ] && [ -e $D/hold ]; then
	echo "$2" >$D/held
	while [ -e $D/hold ]; do sleep 0.05; done
fi
exec %s "$@"
`, dir, real("scontrol"))
	p := filepath.Join(dir, "scontrol")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFaultUsageKill9DuringKill: n3's gpumemd, under UsagePolicy=kill, is killed with
// SIGKILL in the middle of killing a job over its slice: its processes' pidfds are open
// and gpumemd waits on Slurm's answer to which of them are still the job's (`scontrol
// listpids`, held by the test), so no signal has gone out. Nothing may be lost: the
// restarted gpumemd (same history database) warns and kills the over job again, once;
// the job within its slice lives; neither job is in the history twice; n3 is not
// drained for it (gpumemd runs with --drain); no GPU holds more than its memory; and
// gpumemd's log and metrics say what happened.
func TestFaultUsageKill9DuringKill(t *testing.T) {
	g, outDir := cleanLab(t, "/tmp/gpumemd-killfault-")
	capMiB := fakeCapacity(t)
	within := submitSliceJob(t, g, outDir, 3<<10, 1)
	over := submitSliceJob(t, g, outDir, 6<<10, 4)
	if st, reason := nodeState(t, "n3"); strings.Contains(st, "DRAIN") {
		t.Fatalf("n3 drained before the test: %s", reason)
	}
	s := newSidecar(t, "n3")
	s.report(t, within, over)
	hold := t.TempDir()
	s.scontrol = heldScontrol(t, hold)
	if err := os.WriteFile(filepath.Join(hold, "hold"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(filepath.Join(hold, "hold")) }) // a held listpids ends with the test
	db := filepath.Join(t.TempDir(), "history.db")
	args := []string{"--usage-policy", "kill", "--usage-grace", "2s", "--drain", "--history-db", db}

	s.start(t, args...)
	started := time.Now()
	var held []byte
	if !eventually(20*time.Second, func() bool { held, _ = os.ReadFile(filepath.Join(hold, "held")); return len(held) > 0 }) {
		t.Fatalf("gpumemd did not come to confirm a kill within 20s:\n%s", s.log())
	}
	atKill := time.Since(started)
	if got := strings.TrimSpace(string(held)); got != over.id {
		t.Fatalf("gpumemd confirms a kill of job %s, not of job %s over its slice:\n%s", got, over.id, s.log())
	}
	// Its history so far, and what its metrics said last (the poll under way is held).
	before := apiJobs(t, s)
	s.proc.Kill()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("gpumemd still runs 10s after SIGKILL")
	}
	log1 := s.log()
	os.Remove(filepath.Join(hold, "hold"))
	if !strings.Contains(log1, "job="+over.id+" action=warn") || strings.Contains(log1, "action=kill") {
		t.Fatalf("the first gpumemd should have warned job %s and killed nothing:\n%s", over.id, log1)
	}
	if !alivePID(over.pid) || !alivePID(within.pid) || jobState(t, over.id) != "RUNNING" {
		t.Fatalf("killed before its signal, gpumemd still ended something: over %d alive %v (%s), within %d alive %v",
			over.pid, alivePID(over.pid), jobState(t, over.id), within.pid, alivePID(within.pid))
	}
	t.Logf("gpumemd killed -9 %v after its start, confirming the kill of job %s; both jobs' processes still run", atKill.Round(100*time.Millisecond), over.id)

	s.scontrol = ""
	restarted := time.Now()
	s.start(t, args...)
	var st string
	if !eventually(20*time.Second, func() bool {
		st = jobState(t, over.id)
		return st != "RUNNING" && st != "COMPLETING" && !alivePID(over.pid)
	}) {
		t.Fatalf("job %s over its slice not ended 20s after gpumemd restarted: state %q, process alive %v\n%s", over.id, st, alivePID(over.pid), s.log())
	}
	ended := time.Since(restarted)
	time.Sleep(4 * time.Second) // more polls past the grace: nothing more is killed
	log2 := s.log()
	if n := strings.Count(log2, "job="+over.id+" action=kill"); n != 1 {
		t.Errorf("the restarted gpumemd logged %d kills of job %s, want 1:\n%s", n, over.id, log2)
	}
	if strings.Contains(log2, "job="+within.id+" ") {
		t.Errorf("the restarted gpumemd acted on job %s within its slice:\n%s", within.id, log2)
	}
	if st := jobState(t, within.id); st != "RUNNING" || !alivePID(within.pid) {
		t.Errorf("job %s within its slice: state %s, process alive %v; want it running", within.id, st, alivePID(within.pid))
	}
	m := s.metrics(t)
	if metricValue(m, `gpumem_enforcement_actions_total{action="kill"}`) != 1 || metricValue(m, `gpumem_enforcement_actions_total{action="warn"}`) != 1 {
		t.Errorf("the restarted gpumemd's metrics count kill %v, warn %v; want 1 and 1", metricValue(m, `gpumem_enforcement_actions_total{action="kill"}`),
			metricValue(m, `gpumem_enforcement_actions_total{action="warn"}`))
	}
	after := apiJobs(t, s)
	for _, j := range []sliceJob{within, over} {
		b, a := before[j.id], after[j.id]
		if b.ID == "" || a.ID == "" || a.Start != b.Start || a.AllocBytes != 4<<30 {
			t.Errorf("history of job %s: before the kill %+v, after the restart %+v; want one record, its start kept", j.id, b, a)
		}
	}
	// One record each in the list itself (apiJobs keeps the last of a repeated id).
	body, err := get(s.base + "/api/jobs")
	var raw api.JobList
	if err == nil {
		err = json.Unmarshal([]byte(body), &raw)
	}
	if err != nil {
		t.Fatalf("/api/jobs: %v: %q", err, body)
	}
	records := map[string]int{}
	for _, j := range raw.Jobs {
		records[j.ID]++
	}
	if records[over.id] != 1 || records[within.id] != 1 {
		t.Errorf("/api/jobs holds job %s %d times and job %s %d times, want once each", over.id, records[over.id], within.id, records[within.id])
	}
	if st, reason := nodeState(t, "n3"); strings.Contains(st, "DRAIN") {
		t.Errorf("n3 drained after the kill: %s %s", st, reason)
	}
	checkFitsHardware(t, g, capMiB, running(t, g))
	sacct, _, _ := labCmd(30*time.Second, "sacct", "-X", "-n", "-P", "-j", over.id+","+within.id, "-o", "JobID,State,ExitCode")
	t.Logf("restarted gpumemd: job %s (%d MiB of 4096) ended %v after the restart (Slurm: %s); job %s (%d MiB) runs; kill %v, warn %v in /metrics; history records %d and %d\nsacct: %s\nfirst gpumemd:\n%s\nrestarted gpumemd:\n%s",
		over.id, over.usedMiB, ended.Round(100*time.Millisecond), st, within.id, within.usedMiB,
		metricValue(m, `gpumem_enforcement_actions_total{action="kill"}`), metricValue(m, `gpumem_enforcement_actions_total{action="warn"}`), records[over.id], records[within.id],
		strings.Join(strings.Fields(sacct), " "), actionLines(log1), actionLines(log2))
}

// actionLines are the enforcement lines of a gpumemd log.
func actionLines(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "action=") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
