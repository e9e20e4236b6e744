//go:build e2e

package e2e

import (
	"os"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMIGPlanFromQueueAndBusyRefused runs gpumemctl's MIG commands against the lab's
// real Slurm and its fake A100 (n2, in MIG mode): a held job waiting for two 1g.5gb
// instances is read from squeue as demand; an apply onto a busy GPU with --node n2 is
// refused before anything changes, the node left undrained; a dry run lists the drain.
// The full apply (slurmd restart, pending jobs starting) is not covered here.
func TestMIGPlanFromQueueAndBusyRefused(t *testing.T) {
	clean(t)
	lab := "/var/lib/gpumem-lab/" + release
	dir := "/tmp/gpumem-e2e-mig-" + strconv.Itoa(os.Getpid())
	if err := os.MkdirAll(hostPath(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostPath(dir)) })

	id := sbatch(t, "--hold", "-w", "n2", "--gres=gpu:1g.5gb:2", "--wrap", "true")
	t.Cleanup(func() { slurm(t, 30*time.Second, "", "scancel", id) })
	r := slurm(t, 60*time.Second, "", lab+"/bin/gpumemctl", "mig", "plan", "--inventory", "/etc/slurm/gpumem.d",
		"--from-queue", "--keep-whole", "0", "--out", path.Join(dir, "desired"))
	if r.code != 0 || !strings.Contains(r.out, "requests ≤ 4864 MiB (1g.5gb): 2 of 2 served, was 2") {
		t.Fatalf("mig plan --from-queue did not read the pending job's two 1g.5gb:\n%s", r)
	}
	if _, err := os.Stat(hostPath(path.Join(dir, "desired", "n2.json"))); err != nil {
		t.Fatalf("no desired-layout file for n2: %v\n%s", err, r)
	}
	t.Logf("plan:\n%s", r.out)

	// n2's GPU, with a process on it.
	b, err := os.ReadFile(hostPath(lab + "/nodes/n2.json"))
	if err != nil {
		t.Fatal(err)
	}
	busy := strings.Replace(string(b), `"model": "a100-40gb",`, `"model": "a100-40gb", "processes": [{"pid": 4242, "used_mib": 100}],`, 1)
	if busy == string(b) {
		t.Fatalf("n2.json has no a100-40gb GPU to make busy:\n%s", b)
	}
	fake := path.Join(dir, "n2-busy.json")
	os.WriteFile(hostPath(fake), []byte(busy), 0o644)
	r = slurm(t, 60*time.Second, "", lab+"/bin/gpumemctl", "mig", "apply", "--nvml=fake:"+fake, "--node", "n2",
		"--journal", path.Join(dir, "journal.json"), "--yes", "--layout", "0=7g.40gb@0")
	if r.code == 0 || !strings.Contains(r.err, "GPU 0: GPU busy: processes [4242]") || !strings.Contains(r.err, "nothing was changed") {
		t.Fatalf("an apply onto a busy GPU was not refused:\n%s", r)
	}
	if node := ok(t, "scontrol", "show", "node", "n2"); strings.Contains(node, "DRAIN") {
		t.Fatalf("the refused apply drained n2:\n%s", node)
	}
	// "nothing was changed" is a claim: the GPU (the fake's file, which the fake NVML
	// rewrites on every change) is byte for byte what it was.
	unchanged(t, fake, busy, "the refused apply")
	idle := path.Join(dir, "n2.json")
	os.WriteFile(hostPath(idle), b, 0o644)
	r = slurm(t, 60*time.Second, "", lab+"/bin/gpumemctl", "mig", "apply", "--nvml=fake:"+idle, "--node", "n2",
		"--journal", path.Join(dir, "journal.json"), "--dry-run", "--layout", "0=7g.40gb@0")
	if r.code != 0 || !strings.Contains(r.out, `drain n2 with reason "gpumem: MIG layout change"`) {
		t.Fatalf("dry run:\n%s", r)
	}
	t.Logf("dry run:\n%s", r.out)
	// A dry run prints the steps and takes none: n2 undrained, its layout as it was, and
	// no journal of an apply that never ran.
	if node := ok(t, "scontrol", "show", "node", "n2"); strings.Contains(node, "DRAIN") {
		t.Fatalf("the dry run drained n2:\n%s", node)
	}
	unchanged(t, idle, string(b), "the dry run")
	if _, err := os.Stat(hostPath(path.Join(dir, "journal.json"))); !os.IsNotExist(err) {
		t.Fatalf("the dry run left a journal (%v)", err)
	}
}

// unchanged fails t unless the fake GPU file at p still holds want.
func unchanged(t *testing.T, p, want, what string) {
	t.Helper()
	got, err := os.ReadFile(hostPath(p))
	if err != nil || string(got) != want {
		t.Fatalf("%s changed the GPU (%v):\nbefore:\n%s\nafter:\n%s", what, err, want, got)
	}
}
