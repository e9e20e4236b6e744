//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSubmitStorm (a lab with typed shards, where job_submit pins): 32 libslurm
// submitters send 20,000 jobs at once (half gpu:mem:5g, half plain shard:3, both pinned
// while the snapshot is fresh), while the inventory files and the usage snapshot are
// rewritten every second, so slurmctld's threads call job_submit concurrently while the
// plugin's loader reloads. slurmctld must stay up with no panic or internal error in its
// log, no accepted job may keep gpu:mem, and the jobs that run (a released sample and a
// few long ones) never over-allocate a GPU. It takes about a minute on an idle machine
// (20,000 submissions, then as long again to cancel them) and loads both cores; test/e2e.sh
// runs it in its typed pass (24.11-typed), after the pinning tests. By hand: a typed lab
// (LAB_SLURM=24.11 LAB_SHARD_TYPES=per-gpu test/lab/lab.sh up) and -run TestSubmitStorm.
// However it ends, its jobs are cancelled in bounded batches (cancelStorm), so the lab is
// left empty for the next test.
func TestSubmitStorm(t *testing.T) {
	if !typedLab(t) {
		t.Skip("needs a lab started with LAB_SHARD_TYPES=per-gpu (test/e2e.sh 24.11-typed)")
	}
	clean(t)
	// Registered first, so it runs last: even a storm that failed half-way leaves no
	// jobs behind to fail the next test's clean.
	t.Cleanup(func() { cancelStorm(t, 25*time.Minute) })
	g := readGres(t)
	submitter := submitterPath(t)
	logStart := ctldLogMark()

	invDir := hostPath("/etc/slurm/gpumem.d")
	files, err := filepath.Glob(filepath.Join(invDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no inventory files in %s: %v", invDir, err)
	}
	bodies := map[string][]byte{}
	for _, f := range files {
		if bodies[f], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	snap := hostPath("/var/lib/gpumem-lab/" + release + "/usage.json")
	t.Cleanup(func() { os.Remove(snap) })
	put := func(path string, b []byte) {
		tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".storm")
		if err := os.WriteFile(tmp, b, 0o644); err == nil {
			os.Rename(tmp, path)
		}
	}
	rewrite := func() {
		put(snap, []byte(fmt.Sprintf(`{"taken": %q, "gpus": []}`, time.Now().UTC().Format(time.RFC3339))))
		for f, b := range bodies {
			put(f, b) // same content, new file: the loader reads and rebuilds
		}
	}
	rewrite()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
				rewrite()
			}
		}
	}()

	start := time.Now()
	results := make([]result, 2)
	var sub sync.WaitGroup
	for i, gres := range []string{"gpu:mem:5g", "shard:3"} {
		sub.Add(1)
		go func() {
			defer sub.Done()
			results[i] = slurm(t, 15*time.Minute, "", submitter, "16", "625", tresPrefix()+gres)
		}()
	}
	// A few long jobs beside the storm, so that some allocations stand while it runs.
	var long []string
	for _, gib := range []int{20, 30, 10, 40, 7, 15} {
		long = append(long, sbatch(t, fmt.Sprintf("--gres=gpu:mem:%dg", gib), "--wrap", "sleep 120"))
	}
	sub.Wait()
	close(stop)
	wg.Wait()
	took := time.Since(start)
	submitted := 0
	for i, r := range results {
		m := regexp.MustCompile(`submitted=(\d+) failed=(\d+)`).FindStringSubmatch(r.out)
		if r.code != 0 || m == nil {
			t.Fatalf("submitter %d: %s", i, r)
		}
		if m[2] != "0" {
			t.Errorf("submitter %d: %s jobs refused: %s", i, m[2], tail(r.err))
		}
		submitted += int(atoi(t, m[1]))
	}
	t.Logf("%d jobs from 32 submitters in %v while the inventory and snapshot were rewritten every second", submitted, took.Round(time.Millisecond))
	alive(t)

	for _, line := range strings.Split(ctldLogSince(t, logStart), "\n") {
		if l := strings.ToLower(line); strings.Contains(l, "panic") || strings.Contains(l, "internal error") || strings.Contains(l, "fatal error") {
			t.Errorf("slurmctld log: %s", line)
		}
	}

	pinned := 0
	queued := strings.Split(strings.TrimSpace(ok(t, "squeue", "-h", "-t", "pending", "-o", "%i|%b")), "\n")
	var sample []string
	for _, l := range queued {
		id, tres, _ := strings.Cut(l, "|")
		if strings.Contains(tres, "gpu:mem") {
			t.Errorf("job %s kept %s", id, tres)
		}
		if strings.Contains(tres, "_g") {
			pinned++
		}
		if len(sample) < 300 && !strings.Contains(strings.Join(long, " "), id) {
			sample = append(sample, id)
		}
	}
	t.Logf("%d pending, %d of them pinned to one GPU", len(queued), pinned)
	if pinned == 0 {
		t.Error("no job was pinned: the storm did not exercise pinning")
	}
	ok(t, append([]string{"scontrol", "release"}, sample...)...)
	for pass := 0; pass < 5; pass++ {
		time.Sleep(time.Second)
		// Released jobs run "true" and may end between squeue and scontrol: skip those.
		var js []job
		for _, id := range strings.Fields(ok(t, "squeue", "-h", "-t", "running", "-o", "%i")) {
			if r := slurm(t, 30*time.Second, "", "scontrol", "-d", "show", "job", id); r.code == 0 {
				js = append(js, parseJob(t, g, id, r.out))
			}
		}
		checkNoOvercommit(t, g, js)
		if pass == 4 {
			t.Logf("%d jobs running at the last check", len(js))
		}
	}
	alive(t)
}

// cancelBatch is how many jobs one scancel names. `scancel -u root` over 20,000 jobs
// is one kill-jobs request (scancel sends one from 23.11 on) that slurmctld answers when
// all are cancelled: the reply came after the client's MessageTimeout ("Socket timed
// out"), each retry queued behind the last, and the whole took more than 10 minutes. A
// batch of this size is answered in under a second, and between batches the controller
// serves everyone else.
const cancelBatch = 500

// cancelStorm cancels every job in bounded batches of named jobs until the queue is
// empty, and fails the test if that takes longer than limit or leaves slurmctld not
// answering.
func cancelStorm(t *testing.T, limit time.Duration) {
	t.Helper()
	start := time.Now()
	cancelled := 0
	for {
		r := slurm(t, 2*time.Minute, "", "squeue", "-h", "-o", "%i")
		if r.code != 0 {
			// A controller busy with cancellations may time a listing out: try again.
			if time.Since(start) > limit {
				t.Fatalf("cancelling the storm's jobs: squeue: %s", r)
			}
			time.Sleep(5 * time.Second)
			continue
		}
		ids := strings.Fields(r.out)
		if len(ids) == 0 {
			break
		}
		if time.Since(start) > limit {
			t.Fatalf("%d jobs still queued %v after the storm's cancellation began", len(ids), limit)
		}
		for len(ids) > 0 {
			n := min(cancelBatch, len(ids))
			// A timed-out batch is not fatal: its jobs stay listed and the next pass
			// names them again.
			if r := slurm(t, 5*time.Minute, "", append([]string{"scancel", "--quiet"}, ids[:n]...)...); r.code == 0 {
				cancelled += n
			} else {
				t.Logf("scancel of %d jobs: %s", n, strings.TrimSpace(r.err))
			}
			ids = ids[n:]
		}
	}
	t.Logf("cancelled %d jobs in batches of %d in %v", cancelled, cancelBatch, time.Since(start).Round(time.Second))
	alive(t)
}
