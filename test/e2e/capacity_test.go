//go:build e2e

package e2e

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/gpumem/gpumem/internal/discover"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/shard"
)

var (
	fakeMu   sync.Mutex
	fakeMiBs = map[string]map[int]int64{} // node -> GPU minor -> MiB
	minorRE  = regexp.MustCompile(`nvidia(\d+)$`)
)

// fakeShardCap is how many 1 GiB shards the GPU behind a gres.conf File= of a lab node
// has, from the node's fake GPUs (test/lab/nodes) rather than from what gpumem wrote
// into gres.conf: a gres.conf that promised more than the GPU has then cannot hide an
// overcommit. ok is false for a node without a fake file or a file of no GPU.
func fakeShardCap(t testing.TB, node, file string) (int64, bool) {
	t.Helper()
	m := minorRE.FindStringSubmatch(file)
	if m == nil {
		return 0, false
	}
	minor, _ := strconv.Atoi(m[1])
	fakeMu.Lock()
	defer fakeMu.Unlock()
	gpus, seen := fakeMiBs[node]
	if !seen {
		gpus = map[int]int64{}
		// A copy: opening a fake may rewrite it (its MIG layout), never the repository's.
		b, err := os.ReadFile(filepath.Join("..", "lab", "nodes", node+".json"))
		if errors.Is(err, fs.ErrNotExist) {
			// A LAB_SCALE node's file is written at lab start (test/lab/nodes.sh);
			// its GPUs' memory is all that is read here, which a MIG layout never changes.
			b, err = os.ReadFile(hostPath("/var/lib/gpumem-lab/" + release + "/nodes/" + node + ".json"))
		}
		if err == nil {
			path := filepath.Join(t.TempDir(), node+".json")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			src, err := nvmlsrc.Open("fake:" + path)
			if err != nil {
				t.Fatalf("fake GPUs of %s: %v", node, err)
			}
			gs, err := discover.GPUs(src, discover.Options{})
			src.Close()
			if err != nil {
				t.Fatalf("fake GPUs of %s: %v", node, err)
			}
			for _, g := range gs {
				gpus[g.Minor] = g.MemoryMiB
			}
		}
		fakeMiBs[node] = gpus
	}
	mib, found := gpus[minor]
	return shard.PerGPU(mib, 1024), found
}
