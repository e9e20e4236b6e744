//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// labPools is docs/policy.md's recipe 4 on the lab's partitions: the L4s (inference, n3,
// 22.4 GiB each) take requests up to 22 GiB, train (n1's H100s and n2's MIG A100) takes
// 22 GiB and more.
const labPools = "Pools = inference:0-22g, train:22g-"

// TestPoolsRouteBySize proves recipe 4 (node pools by size class): with Pools in
// slurmctld's gpumem.conf, a gpu:mem job that names no partition goes to the partition
// whose range holds its size and runs on that partition's nodes; a size both ranges hold
// is offered to both; a size the pool's partition cannot hold is refused naming it; a job
// that names its partition keeps it. Submitted both from a client whose gpumem.conf names
// no inventory (it leaves gpu:mem as typed; job_submit in slurmctld decides) and from one
// reading slurmctld's gpumem.conf (cli_filter decides first). The lab's gpumem.conf is restored, and reloaded, when the test ends.
func TestPoolsRouteBySize(t *testing.T) {
	clean(t)
	g := readGres(t)
	p := tresPrefix()
	writeNoInv(t)
	// Before: 5g goes to the default partition, every node.
	if before := probe5g(t); before != "gpu|"+p+"shard:5" {
		t.Fatalf("without Pools, gpu:mem:5g is %s; want gpu|%sshard:5", before, p)
	}
	setPools(t, labPools, "inference|"+p+"shard:5")

	paths := []struct{ name, conf string }{{"client without inventory", noInv}}
	if os.Getenv("LAB_CONFIGLESS") != "1" { // there a client reads a login node's gpumem.conf
		paths = append(paths, struct{ name, conf string }{"client with the same gpumem.conf", ""})
	}
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			if path.conf != "" {
				t.Setenv("GPUMEM_CONF", path.conf)
			}
			clean(t)
			for _, c := range []struct{ gres, part, wantPart, wantTRES string }{
				{"gpu:mem:5g", "", "inference", "shard:5"},         // small class: the L4s
				{"gpu:mem:30g", "", "train", "shard:30"},           // big class
				{"gpu:mem:22g", "", "inference,train", "shard:22"}, // both ranges hold 22g: both offered
				{"gpu:mem:5g", "gpu", "gpu", "shard:5"},            // a named partition is kept
			} {
				args := []string{"--hold", "--gres=" + c.gres, "--wrap", "true"}
				if c.part != "" {
					args = append(args, "-p", c.part)
				}
				id := sbatch(t, args...)
				if got := partTRES(t, id); got != c.wantPart+"|"+p+c.wantTRES {
					t.Errorf("--gres=%s -p %q: %s; want %s|%s%s", c.gres, c.part, got, c.wantPart, p, c.wantTRES)
				}
			}
			r := slurm(t, 60*time.Second, "", "sbatch", "--output=/dev/null", "--gres=gpu:mem:100g", "--wrap", "true")
			if want := "but the largest GPU in partition train has 80 GiB"; r.code == 0 || !strings.Contains(r.err, want) {
				t.Errorf("gpu:mem:100g under Pools: want a refusal saying %q, got %s", want, r)
			}
			clean(t)
		})
	}

	// Each class runs on its pool's nodes.
	for gres, node := range map[string]string{"gpu:mem:5g": "n3", "gpu:mem:30g": "n1"} {
		id := sbatch(t, "--gres="+gres, "--wrap", "sleep 300")
		if waitState(t, id, "RUNNING", "FAILED", "COMPLETED") != "RUNNING" {
			t.Fatalf("--gres=%s did not run: %s", gres, ok(t, "scontrol", "show", "job", id))
		}
		if j := showJob(t, g, id); j.node != node {
			t.Errorf("--gres=%s ran on %s; want %s", gres, j.node, node)
		}
	}
	clean(t)
}

// noInv is, inside the lab, a client's gpumem.conf whose inventory is missing: with
// OnError = open the client leaves gpu:mem as typed, so job_submit in slurmctld decides.
// (A client with no gpumem.conf at all still reads the default inventory, the lab's.)
var noInv = filepath.Join("/var/lib/gpumem-lab", release, "client-noinv.conf")

// writeNoInv writes noInv, removed when the test ends.
func writeNoInv(t *testing.T) {
	if err := os.WriteFile(hostPath(noInv), []byte("InventoryPath = /nonexistent\nOnError = open\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(hostPath(noInv)) })
}

// probe5g submits, from a client without inventory, a held gpu:mem:5g job that names no
// partition and returns where slurmctld sent it: "PARTITION|TRES".
func probe5g(t *testing.T) string {
	t.Helper()
	out := ok(t, "env", "GPUMEM_CONF="+noInv, "sbatch", "--output=/dev/null", "--hold", "--gres=gpu:mem:5g", "--wrap", "true")
	m := submittedRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("sbatch: no job id in %q", out)
	}
	defer ok(t, "scancel", m[1])
	return partTRES(t, m[1])
}

// partTRES is a job's partition(s) and TresPerNode, as "PARTITION|TRES".
func partTRES(t *testing.T, id string) string {
	t.Helper()
	show := ok(t, "scontrol", "show", "job", id)
	var part, tres string
	if m := fieldRE("Partition").FindStringSubmatch(show); m != nil {
		part = m[1]
	}
	if m := fieldRE("TresPerNode").FindStringSubmatch(show); m != nil {
		tres = m[1]
	}
	return part + "|" + tres
}

// setPools adds a Pools line to slurmctld's gpumem.conf and waits until job_submit routes
// by it (a 5g probe job lands as want); the file as it was comes back, and is waited for
// the same way, when the test ends.
func setPools(t *testing.T, line, want string) {
	t.Helper()
	conf := ctldConf("gpumem.conf")
	old, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(old), "\nPools") {
		t.Fatalf("%s already sets Pools; this test wants the lab's own file", conf)
	}
	before := probe5g(t)
	write := func(b []byte) {
		tmp := filepath.Join(filepath.Dir(conf), ".gpumem.conf.pools-test")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, conf); err != nil {
			t.Fatal(err)
		}
	}
	await := func(want string) {
		t.Helper()
		var got string
		if !eventually(4*labReloadInterval+5*time.Second, func() bool { got = probe5g(t); return got == want }) {
			t.Fatalf("job_submit did not pick up %s: gpu:mem:5g is %s, want %s", conf, got, want)
		}
	}
	t.Cleanup(func() {
		clean(t)
		write(old)
		await(before)
	})
	write(append(old, []byte(line+"\n")...))
	await(want)
}
