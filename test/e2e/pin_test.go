//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestShardJobsNotPinnedByDefault: pinning shard jobs to a GPU is opt-in. The lab's
// gpumem.conf names a UsageSnapshot but leaves ShardTypes at none, so even with a fresh
// snapshot there, shard jobs and gpu:mem jobs reach Slurm untyped, with no node list.
func TestShardJobsNotPinnedByDefault(t *testing.T) {
	if typedLab(t) {
		t.Skip("the lab runs with LAB_SHARD_TYPES=per-gpu")
	}
	clean(t)
	g := readGres(t)
	freshSnapshot(t)
	for gres, want := range map[string]string{"shard:7": "shard:7", "gpu:mem:30g": "shard:30"} {
		id := sbatch(t, "--hold", "--gres="+gres, "--wrap", "true")
		if j := showJob(t, g, id); j.tresPerNode != tresPrefix()+want {
			t.Errorf("--gres=%s reached Slurm as %s; want %s%s", gres, j.tresPerNode, tresPrefix(), want)
		}
		if out := ok(t, "scontrol", "-o", "show", "job", id); !strings.Contains(out, "ReqNodeList=(null)") {
			t.Errorf("--gres=%s got a required node list: %s", gres, out)
		}
	}
	clean(t)
}

// typedLab reports whether the lab was started with per-GPU shard types.
func typedLab(t *testing.T) bool {
	b, err := os.ReadFile(hostPath("/etc/slurm/gpumem.conf"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), "ShardTypes = per-gpu")
}

// freshSnapshot writes an empty usage snapshot, taken now, where the lab's plugin
// reads it, waits until the plugin's loader has looked (the lab's ReloadInterval is 2s),
// and removes it when the test ends.
func freshSnapshot(t *testing.T) {
	snap := hostPath("/var/lib/gpumem-lab/" + release + "/usage.json")
	body := fmt.Sprintf(`{"taken": %q, "gpus": []}`, time.Now().UTC().Format(time.RFC3339))
	if err := os.WriteFile(snap, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(snap) })
	time.Sleep(labReloadInterval + 500*time.Millisecond)
}

// labReloadInterval is the ReloadInterval test/lab writes into gpumem.conf.
const labReloadInterval = 2 * time.Second

// TestShardJobsPinnedWithTypedShards (a lab started with LAB_SHARD_TYPES=per-gpu, 24.11):
// with a fresh snapshot, shard and gpu:mem jobs are pinned to one GPU's typed shards
// and its node, and run there; without one they are left as they came.
func TestShardJobsPinnedWithTypedShards(t *testing.T) {
	if !typedLab(t) {
		t.Skip("needs a lab started with LAB_SHARD_TYPES=per-gpu")
	}
	clean(t)
	// Each request's own count: 7 shards stay 7, gpu:mem:30g is 30 of the lab's 1 GiB.
	pinnedAs := map[string]*regexp.Regexp{
		"shard:7":     regexp.MustCompile(`^` + tresPrefix() + `shard:(h100|l4)_g\d:7$`),
		"gpu:mem:30g": regexp.MustCompile(`^` + tresPrefix() + `shard:h100_g\d:30$`), // an L4 has 22
	}
	id := sbatch(t, "--hold", "--gres=shard:7", "--wrap", "true")
	if out := ok(t, "squeue", "-h", "-j", id, "-o", "%b|%n"); strings.TrimSpace(out) != tresPrefix()+"shard:7|" {
		t.Errorf("without a snapshot: %s; want %sshard:7 and no node", out, tresPrefix())
	}
	freshSnapshot(t)
	for _, gres := range []string{"shard:7", "gpu:mem:30g"} {
		id := sbatch(t, "--gres="+gres, "--wrap", "sleep 30")
		out := strings.TrimSpace(ok(t, "squeue", "-h", "-j", id, "-o", "%b|%n"))
		tres, node, _ := strings.Cut(out, "|")
		if !pinnedAs[gres].MatchString(tres) || node == "" {
			t.Errorf("--gres=%s: %s; want one GPU's typed shards and its node", gres, out)
		}
		if !eventually(10*time.Second, func() bool { return jobState(t, id) == "RUNNING" }) {
			t.Errorf("--gres=%s pinned as %s did not start", gres, out)
		}
	}
	clean(t)
}
