package main

import (
	"net/http"
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
