//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
)

// configless skips a test outside the configless lab (LAB_CONFIGLESS=1).
func configless(t *testing.T) string {
	t.Helper()
	if os.Getenv("LAB_CONFIGLESS") != "1" {
		t.Skip("not the configless lab (LAB_CONFIGLESS=1 test/lab/lab.sh up)")
	}
	return filepath.Join("/var/lib/gpumem-lab", release)
}

// Only slurmctld has the configuration: no slurm.conf where Slurm looks by default, and
// each slurmd runs on what slurmctld sent it, the pulled node lines and gres.conf with it.
func TestConfiglessNodesRunOnWhatSlurmctldSent(t *testing.T) {
	lab := configless(t)
	if _, err := os.Stat(hostPath("/etc/slurm/slurm.conf")); err == nil {
		t.Fatal("/etc/slurm/slurm.conf exists: the nodes and clients could read it")
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		for _, f := range []string{"slurm.conf", "gres.conf", "gpumem-nodes.conf"} {
			got, err := os.ReadFile(hostPath(filepath.Join(lab, "spool", n, "conf-cache", f)))
			if err != nil {
				t.Errorf("slurmd %s has no %s from slurmctld: %v", n, f, err)
				continue
			}
			if want, _ := os.ReadFile(ctldConf(f)); string(got) != string(want) {
				t.Errorf("slurmd %s's %s differs from slurmctld's", n, f)
			}
		}
	}
	lines, _ := os.ReadFile(ctldConf("gpumem-nodes.conf"))
	if !strings.Contains(string(lines), "# Written by gpumemctl inventory pull") || strings.Count(string(lines), " Gres=gpu:") != 3 {
		t.Errorf("the node lines slurm.conf Includes are not pull's, with a Gres= per node:\n%s", lines)
	}
}

// The controller's inventory is each node's own, as its gpumemd wrote it on the node,
// with the partitions of the controller's slurm.conf.
func TestConfiglessControllerInventoryIsTheNodes(t *testing.T) {
	lab := configless(t)
	ctld, err := inventory.LoadPath(ctldConf("gpumem.d"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ctld.Nodes) != 3 {
		t.Fatalf("controller's inventory has %d nodes, want 3", len(ctld.Nodes))
	}
	for _, n := range ctld.Nodes {
		own, err := inventory.LoadPath(hostPath(filepath.Join(lab, "node", n.Name, "gpumem.d", n.Name+".json")))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(own.Nodes[0].GPUs, n.GPUs) {
			t.Errorf("node %s: the controller's GPUs differ from the node's own file", n.Name)
		}
		if len(n.Partitions) == 0 {
			t.Errorf("node %s: no partitions in the controller's inventory", n.Name)
		}
	}
}

// A client with none of gpumem's files (a login node without gpumem.conf) leaves a new
// batch job's gpu:mem for job_submit to translate, and says nothing about it.
func TestConfiglessJobSubmitTranslatesForAClientWithoutFiles(t *testing.T) {
	configless(t)
	clean(t)
	t.Setenv("GPUMEM_CONF", "/nonexistent/gpumem.conf")
	r := slurm(t, 60*time.Second, "", "sbatch", "--output=/dev/null", "--gres=gpu:mem:20g", "--wrap", "sleep 300")
	if r.code != 0 || strings.Contains(r.err, "gpumem") {
		t.Fatalf("sbatch without gpumem's files: %s", r)
	}
	id := submittedRE.FindStringSubmatch(r.out)[1]
	show := ok(t, "scontrol", "show", "job", id)
	m := fieldRE("TresPerNode").FindStringSubmatch(show)
	if m == nil {
		t.Fatalf("job %s: no TresPerNode:\n%s", id, show)
	}
	// Translated, and to devices that hold the 20 GiB asked (not, say, shard:1).
	if mib, err := translatedMiB(m[1], deviceMiB(t)); err != nil || mib < 20<<10 {
		t.Errorf("job %s: gpu:mem:20g became %s (%d MiB per GPU, %v):\n%s", id, m[1], mib, err, show)
	}
	clean(t)
}
