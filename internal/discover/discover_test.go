package discover

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

func open(t *testing.T, spec string) *nvmlsrc.Source {
	t.Helper()
	src, err := nvmlsrc.Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	return src
}

func TestMockNodes(t *testing.T) {
	for spec, want := range map[string]struct {
		typ string
		mib int64
	}{
		"mock:dgxa100": {"a100", 40960},
		"mock:dgxh100": {"h100", 81920},
		"mock:dgxh200": {"h200", 144384},
	} {
		n, err := Node(open(t, spec), Options{NodeName: "g1"})
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if len(n.GPUs) != 8 {
			t.Fatalf("%s: %d GPUs", spec, len(n.GPUs))
		}
		g := n.GPUs[7]
		if g.Index != 7 || g.Minor != 7 || g.Type != want.typ || g.MemoryMiB != want.mib || g.Cores != "64-127" || g.MIG || !strings.HasPrefix(g.UUID, "GPU-") {
			t.Errorf("%s: GPU 7 = %+v; want index/minor 7, type %s, %d MiB, cores 64-127, no MIG", spec, g, want.typ, want.mib)
		}
	}
}

func TestNodeNeedsAName(t *testing.T) {
	if _, err := Node(open(t, "mock:dgxh100"), Options{}); err == nil {
		t.Fatal("a node without a name was discovered")
	}
}

func TestMIGInstancesFromAFakeNode(t *testing.T) {
	body := `{"gpus": [{"model": "h100-80gb", "minor": 2, "mig": {"enabled": true, "instances": [
		{"profile": "3g.40gb", "start": 4}, {"profile": "1g.10gb", "start": 0}, {"profile": "2g.20gb", "start": 2}]}},
		{"model": "a100-40gb", "mig": {"enabled": false, "pending": true}}]}`
	p := filepath.Join(t.TempDir(), "n.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := Node(open(t, "fake:"+p), Options{NodeName: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	g := n.GPUs[0]
	if !g.MIG || !g.MIGPending || len(g.Instances) != 3 {
		t.Fatalf("GPU 0 = %+v; want MIG on with 3 instances", g)
	}
	want := []struct {
		profile       string
		start, slices int
		mib           int64
	}{{"1g.10gb", 0, 1, 10240}, {"2g.20gb", 2, 2, 20480}, {"3g.40gb", 4, 3, 40960}}
	for i, w := range want {
		in := g.Instances[i]
		if in.Profile != w.profile || in.Start != w.start || in.Slices != w.slices || in.MemoryMiB != w.mib {
			t.Errorf("instance %d = %+v; want %+v", i, in, w)
		}
		giMinor, ciMinor, _ := nvmlsrc.DriverMigMinors(2, in.GI, in.CI)
		files := []string{"/dev/nvidia2", capFile(giMinor), capFile(ciMinor)}
		if strings.Join(in.Files, ",") != strings.Join(files, ",") {
			t.Errorf("instance %d files %v; want %v", i, in.Files, files)
		}
	}
	if a := n.GPUs[1]; a.MIG || !a.MIGPending || len(a.Instances) != 0 {
		t.Errorf("GPU 1 = %+v; want MIG off now, pending on", a)
	}
}

func capFile(minor int) string {
	return "/dev/nvidia-caps/nvidia-cap" + itoa(minor)
}

var itoa = strconv.Itoa

func TestGPUTypeNames(t *testing.T) {
	for name, want := range map[string][2]string{
		"NVIDIA H100 80GB HBM3":      {"h100", "nvidia_h100_80gb_hbm3"},
		"Mock NVIDIA A100-SXM4-40GB": {"a100", "mock_nvidia_a100-sxm4-40gb"},
		"Tesla V100-SXM2-32GB":       {"v100", "tesla_v100-sxm2-32gb"},
		"NVIDIA RTX A6000":           {"a6000", "nvidia_rtx_a6000"},
		"NVIDIA L40S":                {"l40s", "nvidia_l40s"},
		"NVIDIA H200 141GB HBM3e":    {"h200", "nvidia_h200_141gb_hbm3e"},
		"NVIDIA TITAN":               {"nvidia_titan", "nvidia_titan"},
	} {
		if got := GPUType(name, TypeShort); got != want[0] {
			t.Errorf("GPUType(%q, short) = %q; want %q", name, got, want[0])
		}
		if got := GPUType(name, TypeSlurm); got != want[1] {
			t.Errorf("GPUType(%q, slurm) = %q; want %q", name, got, want[1])
		}
		// Slurm matches a configured Type as a substring of what AutoDetect finds.
		if !strings.Contains(GPUType(name, TypeSlurm), GPUType(name, TypeShort)) {
			t.Errorf("%q: short type is not a substring of Slurm's name", name)
		}
	}
}

func TestSysfsCoreMapFoldsHyperthreads(t *testing.T) {
	root := t.TempDir()
	// 2 sockets x 2 cores x 2 threads; Linux numbers CPUs 0-3 first threads, 4-7 siblings.
	topo := map[int][2]int{0: {0, 0}, 1: {0, 1}, 2: {1, 0}, 3: {1, 1}, 4: {0, 0}, 5: {0, 1}, 6: {1, 0}, 7: {1, 1}}
	for cpu, pc := range topo {
		d := filepath.Join(root, "cpu"+itoa(cpu), "topology")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "physical_package_id"), []byte(itoa(pc[0])+"\n"), 0o644)
		os.WriteFile(filepath.Join(d, "core_id"), []byte(itoa(pc[1])+"\n"), 0o644)
	}
	m, err := SysfsCoreMap(root)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := m([]int{2, 3, 6, 7})
	if nvmlsrc.FormatCPUList(got) != "2-3" {
		t.Fatalf("socket 1's CPUs map to cores %v; want 2-3", got)
	}
	if _, err := SysfsCoreMap(filepath.Join(root, "none")); err == nil {
		t.Fatal("an empty sysfs gave a core map")
	}
}

func TestOptionsForKeepsMockCores(t *testing.T) {
	opt := OptionsFor(open(t, "mock:dgxa100"), "g2")
	if opt.NodeName != "g2" || opt.CoreMap != nil {
		t.Fatalf("OptionsFor(mock) = %+v; want the node name and no core map (mocks describe cores)", opt)
	}
}
