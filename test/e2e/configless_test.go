//go:build e2e

package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
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

// A node's answer that a local user serves in its gpumemd's place (here: n1's real
// inventory with a partition line in a GPU type) changes nothing slurmctld ships: the
// pull, run as the lab runs it but through a fake node for n1, names n1 and the field,
// keeps n1's last good file, and writes the node lines and gres.conf byte for byte as
// the lab's own pull did, n2 and n3 pulled from their gpumemd.
func TestConfiglessPullSkipsACraftedNodeAnswer(t *testing.T) {
	lab := configless(t)
	listen := regexp.MustCompile(`(?m)^\s*Listen = (\S+)$`)
	real := map[string]string{} // node -> its gpumemd's host:port
	for _, n := range []string{"n1", "n2", "n3"} {
		b, err := os.ReadFile(hostPath(filepath.Join(lab, "node", n, "gpumem.conf")))
		m := listen.FindSubmatch(b)
		if err != nil || m == nil {
			t.Fatalf("node %s's gpumem.conf has no Listen: %v", n, err)
		}
		real[n] = string(m[1])
	}
	get := func(n string) []byte {
		resp, err := http.Get("http://" + real[n] + "/inventory")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, inventory.MaxNodeFileBytes))
		return b
	}
	good := get("n1")
	crafted := bytes.Replace(good, []byte(`"type": "h100"`), []byte(`"type": "h100\nPartitionName=evil Nodes=ALL AllowGroups=ALL PriorityTier=65533"`), 1)
	if bytes.Equal(crafted, good) {
		t.Fatalf("n1's inventory has no h100 to bend:\n%s", good)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := strings.TrimPrefix(r.URL.Path, "/"); n == "n1" {
			w.Write(crafted)
		} else if _, ok := real[n]; ok {
			w.Write(get(n))
		} else {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	// The controller's files, copied where this pull writes, so the lab's stay as they are.
	work := filepath.Join(lab, "crafted-pull")
	os.RemoveAll(hostPath(work))
	t.Cleanup(func() { os.RemoveAll(hostPath(work)) })
	if err := os.MkdirAll(hostPath(filepath.Join(work, "gpumem.d")), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		b, err := os.ReadFile(ctldConf("gpumem.d/" + n + ".json"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(hostPath(filepath.Join(work, "gpumem.d", n+".json")), b, 0o644)
	}
	before, _ := os.ReadFile(hostPath(filepath.Join(work, "gpumem.d", "n1.json")))
	gres, _ := os.ReadFile(ctldConf("gres.conf"))
	dev := regexp.MustCompile(`File=(\S+)/nvidia[0-9]`).FindSubmatch(gres)
	if dev == nil {
		t.Fatalf("the lab's gres.conf names no device:\n%s", gres)
	}
	etc := filepath.Join(lab, "etc")
	r := slurm(t, 2*time.Minute, "", lab+"/bin/gpumemctl", "inventory", "pull", "--config", etc+"/gpumem.conf",
		"--node-template", etc+"/gpumem-nodes.conf.in", "--node-lines", work+"/gpumem-nodes.conf",
		"--gres-conf", work+"/gres.conf", "--inventory-dir", work+"/gpumem.d", "--dev-prefix", string(dev[1]),
		"--url", srv.URL+"/{node}", "--timeout", "5s")
	if r.code != 1 || !strings.Contains(r.err, "node n1 (") || !strings.Contains(r.err, "type") {
		t.Fatalf("pull with n1 crafted: want exit 1 naming n1 and its type; %s", r)
	}
	if after, _ := os.ReadFile(hostPath(filepath.Join(work, "gpumem.d", "n1.json"))); !bytes.Equal(after, before) {
		t.Errorf("n1's last good file was replaced:\n%s", after)
	}
	if got, err := os.ReadFile(hostPath(work + "/gres.conf")); err != nil || !bytes.Equal(got, gres) {
		t.Errorf("gres.conf differs from the lab's (%v):\n%s\nwant:\n%s", err, got, gres)
	}
	// The node lines' header names where they came from; every other line is the lab's.
	body := func(b []byte) string { return regexp.MustCompile(`(?m)^#.*\n`).ReplaceAllString(string(b), "") }
	want, _ := os.ReadFile(ctldConf("gpumem-nodes.conf"))
	if got, err := os.ReadFile(hostPath(work + "/gpumem-nodes.conf")); err != nil || body(got) != body(want) || strings.Contains(string(got), "evil") {
		t.Errorf("node lines differ from the lab's (%v):\n%s\nwant:\n%s", err, got, want)
	}
}
