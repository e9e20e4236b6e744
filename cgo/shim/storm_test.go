package shim

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestJobSubmitUnderConcurrentCallsWhileFilesChange loads the built job_submit_gpumem.so
// into testdata/storm_harness.c, which calls job_submit from 16 pthreads for 10 s as
// slurmctld >= 23.02 does, with pinning on, while this test rewrites the inventory
// directory (whole files, broken ones, a duplicated node) and the usage snapshot. No
// panic and no "internal error" may reach the log, and no gpu:mem job may come back
// accepted but untranslated.
func TestJobSubmitUnderConcurrentCallsWhileFilesChange(t *testing.T) {
	dir := builtPlugins(t)
	bin := filepath.Join(dir, "storm")
	if b, err := exec.Command("gcc", "-O2", "-Wall", "-rdynamic", "-pthread", "-o", bin, "testdata/storm_harness.c", "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	inv := filepath.Join(dir, "gpumem.d")
	if err := os.Mkdir(inv, 0o755); err != nil {
		t.Fatal(err)
	}
	const nodes = 8
	node := func(i, gpus int) string {
		var g []string
		for k := range gpus {
			g = append(g, fmt.Sprintf(`{"index": %d, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 81559}`, k))
		}
		return fmt.Sprintf(`{"nodes": [{"name": "n%d", "partitions": ["gpu"], "gpus": [%s]}]}`, i, strings.Join(g, ","))
	}
	put := func(path, body string) { // as gpumemd writes: a temporary file renamed into place
		tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
		if err := os.WriteFile(tmp, []byte(body), 0o644); err == nil {
			err = os.Rename(tmp, path)
		}
	}
	var slurm strings.Builder
	for i := range nodes {
		put(filepath.Join(inv, fmt.Sprintf("n%d.json", i)), node(i, 2))
		fmt.Fprintf(&slurm, "NodeName=n%d Gres=gpu:h100_g0:1,gpu:h100_g1:1,shard:h100_g0:79,shard:h100_g1:79\n", i)
	}
	slurm.WriteString("PartitionName=gpu Nodes=ALL Default=YES\n")
	writeFile(t, filepath.Join(dir, "slurm.conf"), slurm.String())
	snap := filepath.Join(dir, "usage.json")
	snapshot := func(shards int) string {
		return fmt.Sprintf(`{"taken": %q, "gpus": [{"node": "n0", "gpu": 0, "shards": %d}]}`, time.Now().UTC().Format(time.RFC3339Nano), shards)
	}
	put(snap, snapshot(10))
	conf := filepath.Join(dir, "gpumem.conf")
	writeFile(t, conf, fmt.Sprintf("InventoryPath = %s\nSlurmConf = %s\nUsageSnapshot = %s\nShardTypes = per-gpu\nPinPolicy = best-fit\nReloadInterval = 0\nLogLevel = error\nRefusalCounts = %s\n",
		inv, filepath.Join(dir, "slurm.conf"), snap, filepath.Join(dir, "refusals.json")))

	cmd := exec.Command(bin, filepath.Join(dir, "job_submit_gpumem.so"), "16", "10")
	cmd.Env = append(os.Environ(), "GPUMEM_CONF="+conf)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- cmd.Wait() }()
	rewrites := 0
	var err error
loop:
	for i := 0; ; i++ {
		select {
		case err = <-done:
			break loop
		case <-time.After(5 * time.Millisecond):
		}
		n := filepath.Join(inv, fmt.Sprintf("n%d.json", i%nodes))
		switch i % 6 {
		case 0:
			put(n, `{"nodes": [`)
		case 1:
			put(filepath.Join(inv, "dup.json"), node(1, 1))
		case 2:
			os.Remove(filepath.Join(inv, "dup.json"))
		case 3:
			put(snap, snapshot(i%70))
		default:
			put(n, node(i%nodes, 1+i%2))
		}
		rewrites++
	}
	if err != nil {
		t.Fatalf("harness: %v\nstdout:\n%s\nstderr (tail):\n%s", err, stdout.String(), tail(stderr.String(), 3000))
	}
	log := stderr.String()
	for _, bad := range []string{"panic", "internal error", "fatal error", "SIGSEGV"} {
		if strings.Contains(log, bad) {
			t.Errorf("%q in the plugin's log:\n%s", bad, tail(log, 3000))
		}
	}
	m := regexp.MustCompile(`jobs=(\d+) untranslated=(\d+) refused=(\d+) pinned=(\d+)`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no summary:\n%s", stdout.String())
	}
	if m[2] != "0" {
		t.Errorf("%s gpu:mem jobs accepted untranslated:\n%s", m[2], tail(stdout.String(), 2000))
	}
	if m[4] == "0" {
		t.Error("no job was pinned: pinning was not exercised")
	}
	t.Logf("%s jobs from 16 threads in 10 s, %s refused, %s pinned, %d file rewrites", m[1], m[3], m[4], rewrites)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
