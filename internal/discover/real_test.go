package discover

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

// TestRealNVML runs the production path (the default --nvml=real) wherever a GPU and its
// driver are present, and is skipped elsewhere. It checks what gres.conf is built on:
// every GPU has a name, a Slurm type, a GPU- UUID, its device file and real memory, and
// each MIG instance fits inside its GPU.
func TestRealNVML(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err != nil {
		t.Skip("no NVIDIA driver on this machine")
	}
	src, err := nvmlsrc.Open("real")
	if err != nil {
		t.Fatalf("Open(real) with a driver present: %v", err)
	}
	defer src.Close()
	n, err := Node(src, Options{NodeName: "gpu-check"})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.GPUs) == 0 {
		t.Fatal("the driver is present but no GPU was discovered")
	}
	for _, g := range n.GPUs {
		t.Logf("GPU %d: %q type=%s uuid=%s minor=%d memory=%d MiB cores=%q mig=%v instances=%d",
			g.Index, g.Name, g.Type, g.UUID, g.Minor, g.MemoryMiB, g.Cores, g.MIG, len(g.Instances))
		if g.Name == "" || g.Type == "" || !strings.HasPrefix(g.UUID, "GPU-") || g.MemoryMiB < 1024 {
			t.Errorf("GPU %d: incomplete: %+v", g.Index, g)
		}
		if _, err := os.Stat(fmt.Sprintf("/dev/nvidia%d", g.Minor)); err != nil {
			t.Errorf("GPU %d: minor %d has no device file: %v", g.Index, g.Minor, err)
		}
	}
	if err := (inventory.Cluster{Nodes: []inventory.Node{n}}).Validate(); err != nil {
		t.Fatal(err)
	}
}
