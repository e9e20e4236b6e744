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
// few long ones) never over-allocate a GPU. It takes about 10 minutes (most of it
// cancelling 20,000 jobs), so test/e2e.sh's typed pass (-run Pin) leaves it out: run it
// by hand on a typed lab with -run TestSubmitStorm.
func TestSubmitStorm(t *testing.T) {
	if !typedLab(t) {
		t.Skip("needs a lab started with LAB_SHARD_TYPES=per-gpu (test/e2e.sh 24.11-typed)")
	}
	clean(t)
	g := readGres(t)
	submitter := submitterPath(t)
	logPath := hostPath("/var/lib/gpumem-lab/" + release + "/log/slurmctld.log")
	logStart := int64(0)
	if fi, err := os.Stat(logPath); err == nil {
		logStart = fi.Size()
	}

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

	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b[min(logStart, int64(len(b))):]), "\n") {
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
	// 20,000 cancellations take a busy slurmctld longer than clean's own scancel waits.
	start = time.Now()
	for time.Since(start) < 10*time.Minute && strings.TrimSpace(ok(t, "squeue", "-h", "-o", "%i")) != "" {
		slurm(t, 10*time.Minute, "", "scancel", "--quiet", "-u", "root")
	}
	t.Logf("cancelled in %v", time.Since(start).Round(time.Second))
	clean(t)
	alive(t)
}
