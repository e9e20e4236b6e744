package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The fence gpumemd finds on each GPU is what /metrics says for it: the driver fence on
// a full GPU where slurm.conf, the kernel and NVML all answer for it, the hardware on a
// MIG GPU; never "none" for a GPU the inventory says is fenced.
func TestFenceMetricIsTheInventorys(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the fake NVML sets limits for root only")
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "cg")
	os.MkdirAll(root, 0o755)
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory dmem\n"), 0o644)
	fake := filepath.Join(dir, "node.json")
	os.WriteFile(fake, []byte(`{"memory_limits": {"log": "`+filepath.Join(dir, "l.log")+`"},`+
		`"gpus": [{"model": "h100-80gb"}, {"model": "a100-40gb", "mig": {"enabled": true, "instances": [{"profile": "7g.40gb", "start": 0}]}}]}`), 0o644)
	conf := filepath.Join(dir, "slurm.conf")
	os.WriteFile(conf, []byte("ClusterName=t\nProlog=/usr/sbin/gpumemd-prolog\nPrologFlags=Contain,RunInJob\nNodeName=f1 Gres=gpu:2\n"), 0o644)
	gpumem := filepath.Join(dir, "gpumem.conf")
	os.WriteFile(gpumem, []byte("SlurmConf = "+conf+"\n"), 0o644)
	addr := start(t, "--config", gpumem, "--nvml", "fake:"+fake, "--node", "f1", "--listen", "127.0.0.1:0",
		"--poll-interval", "200ms", "--write-inventory", "--inventory-dir", filepath.Join(dir, "inv"),
		"--fence-cgroup-root", root, "--slurm-version", "24.11")
	want := []string{`fence="driver",gpu="0"`, `fence="hardware",gpu="1"`}
	var m string
	ok := eventually(5*time.Second, func() bool {
		m = scrape(t, "http://"+addr+"/metrics")
		for _, w := range want {
			if !strings.Contains(m, w) {
				return false
			}
		}
		return true
	})
	if !ok {
		var got []string
		for _, l := range strings.Split(m, "\n") {
			if strings.HasPrefix(l, "gpumem_gpu_fence{") {
				got = append(got, l)
			}
		}
		t.Fatalf("gpumem_gpu_fence series want %v; /metrics has:\n%s", want, strings.Join(got, "\n"))
	}
}
