package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/admit"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/steer"
)

// BenchmarkPluginAtScale measures job_submit's plugin on a generated cluster of
// GPUMEM_BENCH_NODES nodes (test/bench/plugin.sh: 10,000) with 8 H100s each, one inventory file per
// node, a usage snapshot with a third of the GPUs partly taken, and pinning on: the
// loader's times (first load, a reload after one node file changed, a look with nothing
// changed), all off the submit path, and the submit path per job (p50, p99, max) of
// SubmitPinned over a mix of gpu:mem and plain shard jobs, most of them pinned, split into
// admission (with and without the usage view) and the pin choice; for every policy
// PinPolicy takes (the policy's search is most of a pin), and without pinning; then a
// table of p50 and p99 per policy beside the loader's times. It prints figures and
// asserts none: test/bench/plugin.sh runs it.
func BenchmarkPluginAtScale(b *testing.B) {
	var nodes int
	if _, err := fmt.Sscan(os.Getenv("GPUMEM_BENCH_NODES"), &nodes); err != nil || nodes < 1 {
		b.Skip("takes minutes and writes a file per node: run test/bench/plugin.sh [NODES]")
	}
	const gpus = 8
	dir := b.TempDir()
	inv := filepath.Join(dir, "gpumem.d")
	if err := os.Mkdir(inv, 0o755); err != nil {
		b.Fatal(err)
	}
	var slurm strings.Builder
	var snap steer.Snapshot
	snap.Taken = time.Now()
	for i := range nodes {
		name := fmt.Sprintf("gpu%05d", i)
		n := inventory.Node{Name: name, Partitions: []string{"gpu"}}
		var gres []string
		for g := range gpus {
			n.GPUs = append(n.GPUs, inventory.GPU{Index: g, Name: "NVIDIA H100 80GB HBM3", Type: "h100", MemoryMiB: 81559})
			gres = append(gres, fmt.Sprintf("gpu:h100_g%d:1,shard:h100_g%d:79", g, g))
			if (i+g)%3 == 0 {
				snap.GPUs = append(snap.GPUs, steer.GPUUse{Node: name, GPU: g, Shards: int64(10 + (i*7+g)%60)})
			}
		}
		body, err := inventory.Cluster{Nodes: []inventory.Node{n}}.Encode()
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(inv, name+".json"), body, 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(&slurm, "NodeName=%s Gres=%s\n", name, strings.Join(gres, ","))
	}
	slurm.WriteString("PartitionName=gpu Nodes=ALL Default=YES\n")
	write := func(name string, body []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("slurm.conf", []byte(slurm.String()))
	sb, err := snap.Encode()
	if err != nil {
		b.Fatal(err)
	}
	write("usage.json", sb)

	// Every policy PinPolicy takes (the default first), then pinning off; or the
	// comma-separated names in GPUMEM_BENCH_POLICIES ("off" for pinning off).
	policies := append(slices.Clone(pinPolicies), "off")
	if only := os.Getenv("GPUMEM_BENCH_POLICIES"); only != "" {
		policies = strings.Split(only, ",")
	}
	var summary []string
	for _, policy := range policies {
		mode := struct{ name, conf string }{"pinning off", ""}
		if policy != "off" {
			mode.name = "pinning on (ShardTypes = per-gpu, PinPolicy = " + policy + ")"
			mode.conf = "ShardTypes = per-gpu\nPinPolicy = " + policy + "\n"
		}
		write("gpumem.conf", []byte(fmt.Sprintf("InventoryPath = %s\nSlurmConf = %s\nUsageSnapshot = %s\nUsageMaxAge = 1h\nReloadInterval = 0\nLogLevel = error\n%s",
			inv, filepath.Join(dir, "slurm.conf"), filepath.Join(dir, "usage.json"), mode.conf)))
		p := newPlugin(filepath.Join(dir, "gpumem.conf"), "job_submit/gpumem", &lockedSink{}, AdmitCore, time.Now, false)
		timed := func() time.Duration { t0 := time.Now(); p.reload(); return time.Since(t0) }
		first := timed()
		if p.st.Load().core == nil {
			b.Fatalf("no core: %v", p.st.Load().invErr)
		}
		same := timed()
		touched := filepath.Join(inv, "gpu00042.json")
		later := time.Now().Add(time.Second)
		if err := os.Chtimes(touched, later, later); err != nil {
			b.Fatal(err)
		}
		one := timed()

		jobs := []Fields{{PerNode: "gres/gpu:mem:20g"}, {PerNode: "gres/shard:10"}, {PerNode: "gres/gpu:mem:60g"}, {PerNode: "gres/shard:5"}}
		// As many pins as a busy site makes between two snapshots (UsageMaxAge 30 s).
		n := 20000
		pinned := 0
		whole := percentiles(n, func(i int) {
			if v := p.SubmitPinned(jobs[i%len(jobs)]); v.Fields.ReqNodes != "" {
				pinned++
			}
		})
		fmt.Printf("%d nodes x %d GPUs, %s:\n", nodes, gpus, mode.name)
		fmt.Printf("  loader (off the submit path): first load %v, reload after one node file changed %v, look with nothing changed %v\n",
			first.Round(time.Millisecond), one.Round(time.Millisecond), same.Round(time.Millisecond))
		fmt.Printf("  SubmitPinned per job (%d jobs, %d pinned): %s\n", n, pinned, whole)
		summary = append(summary, fmt.Sprintf("%-10s %9v %9v %5d/%d   %v / %v / %v", policy, whole.p50, whole.p99, pinned, n,
			first.Round(time.Millisecond), one.Round(time.Millisecond), same.Round(time.Millisecond)))
		// Where the time goes: admission with and without the usage view, and the pin.
		st := p.st.Load()
		j := jobOf(Fields{PerNode: "gres/gpu:mem:20g"})
		fmt.Printf("  of which admission with the usage view: %s\n", percentiles(n/4, func(int) {
			p.pins.withUsage(st, time.Now(), func(u *admit.Usage) { _, _ = st.core.AdmitWith(j, u) })
		}))
		fmt.Printf("  admission without a usage view: %s\n", percentiles(n/4, func(int) { _, _ = st.core.AdmitWith(j, nil) }))
		if st.pin != nil {
			fmt.Printf("  pin choice alone (placement search + commit): %s\n", percentiles(n/4, func(int) { _, _, _ = p.pins.choose(st, 5, nil, time.Now()) }))
		}
	}
	fmt.Printf("\nSubmitPinned per job, %d nodes x %d GPUs (target: p99 <= 100us with pinning on):\n", nodes, gpus)
	fmt.Printf("%-10s %9s %9s %10s   %s\n", "PinPolicy", "p50", "p99", "pinned", "loader, off the path: first load / one node file changed / nothing changed")
	for _, l := range summary {
		fmt.Println(l)
	}
}

// timings are the p50, p99 and max of a run of calls.
type timings struct{ p50, p99, max time.Duration }

func (t timings) String() string { return fmt.Sprintf("p50 %v, p99 %v, max %v", t.p50, t.p99, t.max) }

// percentiles times n calls of f.
func percentiles(n int, f func(i int)) timings {
	took := make([]time.Duration, n)
	for i := range n {
		t0 := time.Now()
		f(i)
		took[i] = time.Since(t0)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	return timings{took[n/2], took[n*99/100], took[n-1]}
}
