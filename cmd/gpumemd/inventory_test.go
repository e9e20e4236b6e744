package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
)

// The node's inventory is served as the file gpumemd wrote, on a public listener too
// (it names GPUs, never jobs), for a controller without a shared /etc/slurm to pull.
func TestInventoryServedForPull(t *testing.T) {
	dir := t.TempDir()
	addr := start(t, "--config", "/dev/null", "--nvml", "mock:dgxh100", "--node", "t4", "--listen", "0.0.0.0:0",
		"--history-db", "", "--health-state", "", "--poll-interval", "100ms",
		"--write-inventory", "--inventory-dir", filepath.Join(dir, "inv"))
	base := "http://127.0.0.1:" + addr[strings.LastIndex(addr, ":")+1:]
	var code int
	var body []byte
	eventually(5*time.Second, func() bool { code, body = get(t, base+"/inventory"); return code == http.StatusOK })
	if code != http.StatusOK {
		t.Fatalf("/inventory: %d %s", code, body)
	}
	c, err := inventory.Decode(body)
	if err != nil {
		t.Fatalf("/inventory is not an inventory: %v\n%s", err, body)
	}
	if len(c.Nodes) != 1 || c.Nodes[0].Name != "t4" || len(c.Nodes[0].GPUs) != 8 {
		t.Errorf("/inventory: %+v; want node t4 with the mock's 8 GPUs", c.Nodes)
	}
	if code, body := get(t, base+"/api/jobs"); code != http.StatusForbidden {
		t.Errorf("/api/jobs on a public listener: %d %s; want it kept off", code, body)
	}
}

func TestInventoryNotServedWithoutWriting(t *testing.T) {
	addr := start(t, "--config", "/dev/null", "--nvml", "mock:dgxh100", "--node", "t5", "--listen", "127.0.0.1:0",
		"--history-db", "", "--health-state", "")
	code, body := get(t, "http://"+addr+"/inventory")
	if code != http.StatusNotFound || !strings.Contains(string(body), "WriteInventory = yes") {
		t.Errorf("/inventory without --write-inventory: %d %s; want 404 naming WriteInventory", code, body)
	}
}

// Each GPU's fence in the inventory is what the node answers: the driver fence needs
// gpumemd's prolog run in the job (PrologFlags=RunInJob), a cgroup2 hierarchy and the
// NVML functions answering on gpumemd's own probe cgroup; without any of them the GPU
// says none, and a MIG GPU hardware. A kernel without dmem fences through the driver's
// misc backend, and the inventory says which backend holds.
func TestInventoryFenceIsWhatTheNodeAnswers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the fake NVML sets limits for root only")
	}
	for _, c := range []struct {
		name, flags, controllers, limits string
		want                             []string
		plugstack, prolog                string
		backend                          string
	}{
		// Through gpumem's SPANK plugin (the way on 22.05): required, with Contain.
		{"spank", "Contain", "cpu memory dmem", `"memory_limits": {"log": "LOG"},`, []string{"driver", "hardware"},
			"required /usr/lib/slurm/spank_gpumem.so /usr/sbin/gpumemd\n", "-", "dmem"},
		{"spank without Contain", "Alloc", "cpu memory dmem", `"memory_limits": {"log": "LOG"},`, []string{"none", "hardware"},
			"required /usr/lib/slurm/spank_gpumem.so /usr/sbin/gpumemd\n", "-", ""},
		{"spank optional", "Contain", "cpu memory dmem", `"memory_limits": {"log": "LOG"},`, []string{"none", "hardware"},
			"optional /usr/lib/slurm/spank_gpumem.so /usr/sbin/gpumemd\n", "-", ""},
		{"RunInJob with another prolog", "Contain,RunInJob", "cpu memory dmem", `"memory_limits": {"log": "LOG"},`, []string{"none", "hardware"},
			"", "/usr/sbin/site-prolog", ""},
		{"all answer", "Contain,RunInJob", "cpu memory dmem", `"memory_limits": {"log": "LOG"},`, []string{"driver", "hardware"}, "", "", "dmem"},
		{"no RunInJob", "Contain", "cpu memory dmem", `"memory_limits": {"log": "LOG"},`, []string{"none", "hardware"}, "", "", ""},
		{"no dmem: misc", "Contain,RunInJob", "cpu memory", `"memory_limits": {"log": "LOG"},`, []string{"driver", "hardware"}, "", "", "misc"},
		{"no cgroup v2", "Contain,RunInJob", "", `"memory_limits": {"log": "LOG"},`, []string{"none", "hardware"}, "", "", ""},
		{"old driver", "Contain,RunInJob", "cpu memory dmem", ``, []string{"none", "hardware"}, "", "", ""},
		{"driver says no", "Contain,RunInJob", "cpu memory dmem", `"memory_limits": {"log": "LOG", "answer": "ERROR_NOT_SUPPORTED"},`, []string{"none", "hardware"}, "", "", ""},
	} {
		dir := t.TempDir()
		root := filepath.Join(dir, "cg")
		os.MkdirAll(root, 0o755)
		if c.controllers != "" {
			os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte(c.controllers+"\n"), 0o644)
		}
		fake := filepath.Join(dir, "node.json")
		os.WriteFile(fake, []byte(`{`+strings.ReplaceAll(c.limits, "LOG", filepath.Join(dir, "l.log"))+
			`"gpus": [{"model": "h100-80gb"}, {"model": "a100-40gb", "mig": {"enabled": true, "instances": [{"profile": "7g.40gb", "start": 0}]}}]}`), 0o644)
		conf := filepath.Join(dir, "slurm.conf")
		prolog := "Prolog=/usr/sbin/gpumemd-prolog\n"
		switch c.prolog {
		case "-":
			prolog = ""
		case "":
		default:
			prolog = "Prolog=" + c.prolog + "\n"
		}
		if c.plugstack != "" {
			os.WriteFile(filepath.Join(dir, "plugstack.conf"), []byte(c.plugstack), 0o644)
		}
		os.WriteFile(conf, []byte("ClusterName=t\n"+prolog+"PrologFlags="+c.flags+"\nNodeName=f1 Gres=gpu:2\n"), 0o644)
		gpumem := filepath.Join(dir, "gpumem.conf")
		os.WriteFile(gpumem, []byte("SlurmConf = "+conf+"\n"), 0o644)
		inv := filepath.Join(dir, "inv")
		if err := run(context.Background(), []string{"--config", gpumem, "--once", "--write-inventory", "--inventory-dir", inv,
			"--nvml", "fake:" + fake, "--node", "f1", "--fence-cgroup-root", root, "--slurm-version", "24.11"}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		cl, err := inventory.LoadPath(filepath.Join(inv, "f1.json"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, g := range cl.Nodes[0].GPUs {
			got = append(got, g.FenceOf())
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: fences %v; want %v", c.name, got, c.want)
		}
		if b := cl.Nodes[0].GPUs[0].FenceBackend; b != c.backend {
			t.Errorf("%s: backend %q; want %q", c.name, b, c.backend)
		}
		if _, err := os.Stat(filepath.Join(root, probeCgroup)); err == nil {
			t.Errorf("%s: the probe cgroup outlived the probe", c.name)
		}
	}
}
