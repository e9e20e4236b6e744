//go:build e2e

package e2e

import (
	"os"
	"path"
	"strconv"
	"testing"
	"time"
)

// TestLabGresIsGpumemds: the lab's gres.conf is what gpumemd --once writes from the
// nodes' fake NVML files, byte for byte, and the lab's own slurmd -G accepts it for
// every node (gpumemd refuses to install a file slurmd rejects). It runs the lab's
// copy of gpumemd where the lab's Slurm is, as test/lab/gres.sh does.
func TestLabGresIsGpumemds(t *testing.T) {
	lab := "/var/lib/gpumem-lab/" + release
	dir := "/tmp/gpumemd-e2e-gres-" + strconv.Itoa(os.Getpid())
	if err := os.MkdirAll(hostPath(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostPath(dir)) })
	gres := path.Join(dir, "gres.conf")
	for _, n := range []string{"n1", "n2", "n3"} {
		r := slurm(t, 60*time.Second, "", lab+"/bin/gpumemd", "--once", "--config", lab+"/gpumemd.conf",
			"--nvml=fake:"+lab+"/nodes/"+n+".json", "--node", n, "--dev-prefix", "/run/gpumem-lab/dev",
			"--write-inventory", "--inventory-dir", path.Join(dir, "inv"), "--write-gres", "--gres-conf", gres)
		if r.code != 0 {
			t.Fatalf("gpumemd --once for %s: %s", n, r)
		}
	}
	got, err := os.ReadFile(hostPath(gres))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(hostPath("/etc/slurm/gres.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("gpumemd --once wrote\n%s\nthe lab runs on\n%s", got, want)
	}
	// Both files come from the same binary: the shard counts are also held against the
	// fake GPUs' memory, so a gres.conf promising more than a GPU has fails here.
	g := readGres(t)
	records := 0
	for node, counts := range g.count {
		for file, n := range counts {
			records++
			if c, known := fakeShardCap(t, node, file); !known || n != c {
				t.Errorf("%s %s: gres.conf has %d shards; the fake GPU holds %d (known %v)", node, file, n, c, known)
			}
		}
	}
	if records == 0 {
		t.Errorf("no shard record in the lab's gres.conf:\n%s", want)
	}
}
