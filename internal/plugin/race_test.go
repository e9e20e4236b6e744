package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/steer"
)

// lockedSink is a logSink for many goroutines.
type lockedSink struct {
	mu sync.Mutex
	logSink
}

func (s *lockedSink) Error(m string) { s.mu.Lock(); s.logSink.Error(m); s.mu.Unlock() }
func (s *lockedSink) Info(m string)  { s.mu.Lock(); s.logSink.Info(m); s.mu.Unlock() }
func (s *lockedSink) Debug(m string) { s.mu.Lock(); s.logSink.Debug(m); s.mu.Unlock() }

func (s *lockedSink) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range append(append(s.errors, s.infos...), s.debugs...) {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}

// nodeFile is one node's inventory file with gpus H100s.
func nodeFile(name string, gpus int) []byte {
	c := inventory.Cluster{Nodes: []inventory.Node{{Name: name, Partitions: []string{"gpu"}}}}
	for i := range gpus {
		c.Nodes[0].GPUs = append(c.Nodes[0].GPUs, inventory.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3", Type: "h100", MemoryMiB: 81559})
	}
	b, err := c.Encode()
	if err != nil {
		panic(err)
	}
	return b
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// writeAtomic writes like gpumemd does: a temporary file renamed into place.
func writeAtomic(t testing.TB, path string, b []byte) {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Error(err)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Error(err)
	}
}

// TestConcurrentSubmitsWhileFilesChange runs the plugin as slurmctld >= 23.02 does:
// job_submit from many threads at once, with the loader reading an inventory directory,
// a usage snapshot and gpumem.conf that another goroutine keeps rewriting (whole, broken,
// duplicated). Run it with -race: there must be no data race, no panic, and never a
// gpu:mem job passed on untranslated.
func TestConcurrentSubmitsWhileFilesChange(t *testing.T) {
	dir := t.TempDir()
	invDir := filepath.Join(dir, "gpumem.d")
	if err := os.Mkdir(invDir, 0o755); err != nil {
		t.Fatal(err)
	}
	const nodes = 16
	var slurm strings.Builder
	for i := range nodes {
		writeAtomic(t, filepath.Join(invDir, fmt.Sprintf("n%d.json", i)), nodeFile(fmt.Sprintf("n%d", i), 2))
		fmt.Fprintf(&slurm, "NodeName=n%d Gres=gpu:h100_g0:1,gpu:h100_g1:1,shard:h100_g0:79,shard:h100_g1:79\n", i)
	}
	slurm.WriteString("PartitionName=gpu Nodes=ALL Default=YES\n")
	if err := os.WriteFile(filepath.Join(dir, "slurm.conf"), []byte(slurm.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "usage.json")
	conf := filepath.Join(dir, "gpumem.conf")
	confBody := func(policy, level string) []byte {
		return []byte(fmt.Sprintf("InventoryPath = %s\nSlurmConf = %s\nUsageSnapshot = %s\nShardTypes = per-gpu\nPinPolicy = %s\nLogLevel = %s\nReloadInterval = 0\nRefusalCounts = %s\n",
			invDir, filepath.Join(dir, "slurm.conf"), snap, policy, level, filepath.Join(dir, "refusals.json")))
	}
	writeSnap := func(shards int64) {
		b, err := steer.Snapshot{Taken: time.Now(), GPUs: []steer.GPUUse{{Node: "n0", GPU: 0, Shards: shards}}}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		writeAtomic(t, snap, b)
	}
	writeSnap(10)
	writeAtomic(t, conf, confBody("best-fit", "error"))

	sink := &lockedSink{}
	p := New(conf, "job_submit/gpumem", sink, AdmitCore)
	defer p.Close()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the files change under the loader
		defer wg.Done()
		for i := 0; !closed(stop); i++ {
			n := filepath.Join(invDir, fmt.Sprintf("n%d.json", i%nodes))
			switch i % 7 {
			case 0:
				writeAtomic(t, n, []byte(`{"nodes": [`)) // broken: costs that node only
			case 1:
				writeAtomic(t, filepath.Join(invDir, "dup.json"), nodeFile("n1", 1)) // n1 twice
			case 2:
				os.Remove(filepath.Join(invDir, "dup.json"))
			case 3:
				writeSnap(int64(i % 70))
			case 4:
				writeAtomic(t, conf, confBody([]string{"best-fit", "gpumem", "spread"}[i%3], []string{"error", "info"}[i%2]))
			default:
				writeAtomic(t, n, nodeFile(fmt.Sprintf("n%d", i%nodes), 1+i%2))
			}
			time.Sleep(3 * time.Millisecond)
		}
	}()

	var jobs, untranslated, pinned atomic.Int64
	const workers = 12
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !closed(stop); i++ {
				jobs.Add(1)
				var v Verdict
				switch (w + i) % 4 {
				case 0:
					v = p.Submit(Fields{PerNode: "gres/gpu:mem:20g"})
				case 1:
					v = p.SubmitPinned(Fields{PerNode: "gres/gpu:mem:10g"})
				case 2:
					v = p.SubmitPinned(Fields{PerNode: "gres/shard:5"})
				case 3:
					if _, refusal := p.SubmitOptions(Options{Gres: "gres/gpu:mem:5g"}, 7, Fields{PerNode: "gres/shard:20"}); refusal != "" {
						t.Errorf("step: %s", refusal)
					}
					continue
				}
				if v.Refusal == "" && AsksMem(v.Fields) {
					untranslated.Add(1)
				}
				if v.Fields.ReqNodes != "" {
					pinned.Add(1)
				}
			}
		}()
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()

	if n := sink.count("internal error"); n > 0 {
		t.Errorf("%d internal errors: %v", n, sink.errors)
	}
	if n := untranslated.Load(); n > 0 {
		t.Errorf("%d of %d gpu:mem jobs passed on untranslated", n, jobs.Load())
	}
	if pinned.Load() == 0 {
		t.Error("no job was pinned: the test did not exercise pinning")
	}
	if sink.count("skipped, the rest is used") == 0 {
		t.Error("no broken node file was reported: the test did not exercise the loader")
	}
	t.Logf("%d jobs from %d goroutines, %d pinned", jobs.Load(), workers, pinned.Load())
}
