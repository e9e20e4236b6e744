package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
)

// run runs gpumemctl with args and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestGresGenerateFromMockToStdout(t *testing.T) {
	out, err := run(t, "gres", "generate", "--nvml=mock:dgxh200", "--node", "g1", "--shard-unit", "2G", "--slurm-version", "24.11")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "# slurm.conf: NodeName=g1 Gres=gpu:h200:8,shard:h200:560\n") ||
		strings.Count(out, "Name=shard Count=70 File=/dev/nvidia") != 8 {
		t.Fatalf("output:\n%s", out)
	}
}

func TestGresGenerateInstallsOnceAndWritesInventoryDir(t *testing.T) {
	dir := t.TempDir()
	invDir := filepath.Join(dir, "gpumem.d")
	if err := os.Mkdir(invDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Another node's inventory is already there: the shared gres.conf must keep it.
	other := inventory.Cluster{Nodes: []inventory.Node{{Name: "a1", GPUs: []inventory.GPU{{Index: 0, Type: "a100", MemoryMiB: 40960}}}}}
	b, _ := other.Encode()
	os.WriteFile(filepath.Join(invDir, "a1.json"), b, 0o644)

	gres := filepath.Join(dir, "gres.conf")
	args := []string{"gres", "generate", "--nvml=mock:dgxh100", "--node", "h1", "--inventory-out", invDir,
		"--out", gres, "--node-gres", filepath.Join(dir, "node-gres"), "--dev-prefix", "/lab/dev", "--no-cores", "--slurm-version", "24.11"}
	out, err := run(t, args...)
	if err != nil || !strings.Contains(out, gres+": written") {
		t.Fatalf("first generate: %v\n%s", err, out)
	}
	conf, _ := os.ReadFile(gres)
	for _, want := range []string{"NodeName=a1 Name=gpu Type=a100 File=/lab/dev/nvidia0", "NodeName=h1 Name=shard Count=80 File=/lab/dev/nvidia7"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("gres.conf lacks %q:\n%s", want, conf)
		}
	}
	if g, _ := os.ReadFile(filepath.Join(dir, "node-gres", "h1")); string(g) != "gpu:h100:8,shard:h100:640\n" {
		t.Errorf("node Gres = %q", g)
	}
	c, err := inventory.LoadPath(invDir)
	if err != nil || len(c.Nodes) != 2 {
		t.Fatalf("inventory dir: %v, %d nodes", err, len(c.Nodes))
	}
	out, err = run(t, args...)
	if err != nil || !strings.Contains(out, gres+": unchanged") || !strings.Contains(out, "h1.json: unchanged") {
		t.Fatalf("second generate should change nothing: %v\n%s", err, out)
	}
	if _, err := os.Stat(gres + ".prev"); err == nil {
		t.Error("an unchanged generation kept a .prev")
	}
	out, err = run(t, "gres", "diff", "--inventory", invDir, "--current", gres, "--dev-prefix", "/lab/dev", "--no-cores", "--slurm-version", "24.11")
	if err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("diff after generate: %v\n%s", err, out)
	}
	out, err = run(t, "gres", "diff", "--inventory", invDir, "--current", gres, "--dev-prefix", "/lab/dev", "--no-cores", "--shard-unit", "2G", "--slurm-version", "24.11")
	var st exitStatus
	if !errors.As(err, &st) || st.code != 1 || st.err != nil ||
		!strings.Contains(out, "-NodeName=h1 Name=shard Count=80") || !strings.Contains(out, "+NodeName=h1 Name=shard Count=40") {
		t.Fatalf("diff with another unit: want exit status 1 and the diff, got %v\n%s", err, out)
	}
	if out, err := run(t, "gres", "diff", gres, "--inventory", invDir, "--dev-prefix", "/lab/dev", "--no-cores", "--slurm-version", "24.11"); err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("diff with the file as its argument, as check takes it: %v\n%s", err, out)
	}
	_, err = run(t, "gres", "diff", "--inventory", filepath.Join(dir, "missing"), "--current", gres)
	if !errors.As(err, &st) || st.code != 2 || st.err == nil {
		t.Fatalf("diff of an inventory that is not there: want exit status 2 with the reason, got %v", err)
	}
}

func TestGresGenerateRefusesWhatSlurmdRejects(t *testing.T) {
	if _, err := exec.LookPath("slurmd"); err != nil {
		t.Skip("slurmd not installed")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	os.WriteFile(conf, []byte("ClusterName=t\nSlurmctldHost=localhost\nGresTypes=gpu,shard\nSlurmdSpoolDir="+dir+"/spool\n"+
		"NodeName=h1 NodeHostname=localhost CPUs=8 Gres=gpu:h100:8,shard:640\nPartitionName=p Nodes=h1 Default=YES\n"), 0o644)
	gres := filepath.Join(dir, "gres.conf")
	os.WriteFile(gres, []byte("# the old, good file\n"), 0o644)
	// The device files do not exist here: slurmd must refuse, and the old file stay.
	_, err := run(t, "gres", "generate", "--nvml=mock:dgxh100", "--node", "h1", "--out", gres, "--slurm-conf", conf, "--dev-prefix", filepath.Join(dir, "missing"))
	if err == nil || !strings.Contains(err.Error(), "not replaced") || !strings.Contains(err.Error(), "device files missing") {
		t.Fatalf("generate with missing device files: %v", err)
	}
	if b, _ := os.ReadFile(gres); string(b) != "# the old, good file\n" {
		t.Fatalf("the old gres.conf was replaced by %q", b)
	}
	_, err = run(t, "gres", "generate", "--nvml=mock:dgxh100", "--node", "nowhere", "--out", gres, "--slurm-conf", conf)
	if err == nil || !strings.Contains(err.Error(), "not defined in") {
		t.Fatalf("a node missing from slurm.conf: %v", err)
	}
}

func TestInventoryCommand(t *testing.T) {
	out, err := run(t, "inventory", "--nvml=fake:../../internal/nvmlsrc/testdata/mig-a100.json", "--node", "n2", "--format", "table")
	if err != nil || !strings.Contains(out, "3g.20gb") || !strings.Contains(out, "/dev/nvidia5") {
		t.Fatalf("table: %v\n%s", err, out)
	}
	out, err = run(t, "inventory", "--nvml=mock:dgxa100", "--node", "n")
	if err != nil {
		t.Fatal(err)
	}
	c, err := inventory.Decode([]byte(out))
	if err != nil || len(c.Nodes) != 1 || len(c.Nodes[0].GPUs) != 8 {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if _, err := run(t, "inventory", "--nvml=mock:dgxa100", "--format", "yaml"); err == nil {
		t.Fatal("an unknown format was accepted")
	}
	if _, err := run(t, "inventory", "--nvml=mock:dgxa100", "--inventory", "x.json"); err == nil || !strings.Contains(err.Error(), "both given") {
		t.Fatalf("two sources: %v", err)
	}
}

// TestLabFakeNodesReproduceTheLabsGres generates the three lab nodes from the lab's own
// fake NVML files (test/lab/nodes) and expects what Slurm sees in the lab (docs/lab.md):
// every line, and no other.
func TestLabFakeNodesReproduceTheLabsGres(t *testing.T) {
	dir := t.TempDir()
	inv, gres := filepath.Join(dir, "inv"), filepath.Join(dir, "gres.conf")
	os.Mkdir(inv, 0o755)
	for _, n := range []string{"n1", "n2", "n3"} {
		if _, err := run(t, "gres", "generate", "--nvml=fake:../../test/lab/nodes/"+n+".json", "--node", n, "--slurm-version", "24.11",
			"--inventory-out", inv, "--out", gres, "--dev-prefix", "/lab/dev", "--node-gres", filepath.Join(dir, "ng")); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(gres)
	got := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "NodeName=") {
			got[l] = true
		}
	}
	var want []string
	for i := 0; i < 2; i++ {
		want = append(want, fmt.Sprintf("NodeName=n1 Name=gpu Type=h100 File=/lab/dev/nvidia%d Cores=%d-%d", i, 8*i, 8*i+7), fmt.Sprintf("NodeName=n1 Name=shard Count=80 File=/lab/dev/nvidia%d", i))
	}
	for _, m := range []string{"2g.10gb:3,4", "1g.5gb:12,13", "1g.5gb:21,22", "3g.20gb:30,31"} {
		typ, caps, _ := strings.Cut(m, ":")
		a, b, _ := strings.Cut(caps, ",")
		want = append(want, fmt.Sprintf("NodeName=n2 Name=gpu Type=%s MultipleFiles=/lab/dev/nvidia0,/lab/dev/nvidia-caps/nvidia-cap%s,/lab/dev/nvidia-caps/nvidia-cap%s", typ, a, b))
	}
	for i := 0; i < 4; i++ {
		want = append(want, fmt.Sprintf("NodeName=n3 Name=gpu Type=l4 File=/lab/dev/nvidia%d Cores=%d-%d", i, 4*i, 4*i+3), fmt.Sprintf("NodeName=n3 Name=shard Count=22 File=/lab/dev/nvidia%d", i))
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("missing %q", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d lines; want %d:\n%s", len(got), len(want), b)
	}
	for n, g := range map[string]string{"n1": "gpu:h100:2,shard:h100:160", "n2": "gpu:2g.10gb:1,gpu:1g.5gb:2,gpu:3g.20gb:1", "n3": "gpu:l4:4,shard:l4:88"} {
		if b, _ := os.ReadFile(filepath.Join(dir, "ng", n)); string(b) != g+"\n" {
			t.Errorf("%s Gres=%q; want %s", n, b, g)
		}
	}
}

func TestGresCheck(t *testing.T) {
	if _, err := exec.LookPath("slurmd"); err != nil {
		t.Skip("slurmd not installed")
	}
	dir := t.TempDir()
	dev := filepath.Join(dir, "dev")
	os.Mkdir(dev, 0o755)
	for i := 0; i < 8; i++ {
		os.WriteFile(filepath.Join(dev, fmt.Sprintf("nvidia%d", i)), nil, 0o644)
	}
	conf := filepath.Join(dir, "slurm.conf")
	os.WriteFile(conf, []byte("ClusterName=t\nSlurmctldHost=localhost\nGresTypes=gpu,shard\nSlurmdSpoolDir="+dir+"/spool\n"+
		"NodeName=h[1-2] NodeHostname=localhost CPUs=8 Gres=gpu:h100:8,shard:640\nNodeName=cpu1 NodeHostname=localhost CPUs=8\n"+
		"PartitionName=p Nodes=ALL Default=YES\n"), 0o644)
	inv := filepath.Join(dir, "inv")
	os.Mkdir(inv, 0o755)
	for _, n := range []string{"h1", "h2"} {
		if _, err := run(t, "gres", "generate", "--nvml=mock:dgxh100", "--node", n, "--no-cores", "--dev-prefix", dev,
			"--inventory-out", inv, "--slurm-conf", conf, "--out", filepath.Join(dir, "gres.conf")); err != nil {
			t.Fatalf("generate %s: %v", n, err)
		}
	}
	c, err := inventory.LoadPath(inv)
	if err != nil || strings.Join(c.Nodes[0].Partitions, ",") != "p" || c.Nodes[0].CPUs != 8 {
		t.Fatalf("inventory not annotated from slurm.conf: %+v %v", c.Nodes, err)
	}
	out, err := run(t, "gres", "check", "--slurm-conf", conf)
	if err != nil || !strings.Contains(out, "accepted by slurmd for 2 node(s)") || !strings.Contains(out, "node h2: ") {
		t.Fatalf("check: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(dir, "broken.conf"), []byte("NodeName=h1 Name=gpu Type=h100 File="+dev+"/nvidia0 Bogus=1\n"), 0o644)
	var st exitStatus
	if _, err := run(t, "gres", "check", filepath.Join(dir, "broken.conf"), "--slurm-conf", conf, "--node", "h1"); !errors.As(err, &st) || st.code != 1 {
		t.Fatalf("a broken gres.conf: %v; want exit status 1", err)
	}
	if _, err := run(t, "gres", "check", "--slurm-conf", conf, "--node", "n9"); !errors.As(err, &st) || st.code != 2 ||
		!strings.Contains(err.Error(), "no such NodeName") {
		t.Fatalf("check of a node slurm.conf lacks: %v; want exit status 2 naming it", err)
	}
}

func TestGresGenerateInventoryOutNewDirKeepsEveryNode(t *testing.T) {
	dir := t.TempDir()
	for i, tc := range []struct {
		out    string
		isDir  bool
		nodes  []string
		refuse string
	}{
		{out: filepath.Join(dir, "new-inv"), isDir: true, nodes: []string{"g1", "g2"}},
		{out: filepath.Join(dir, "slash") + "/", isDir: true, nodes: []string{"g1", "g2"}},
		{out: filepath.Join(dir, "one.json"), nodes: []string{"g1"}},
	} {
		for _, node := range tc.nodes {
			if out, err := run(t, "gres", "generate", "--nvml=mock:dgxa100", "--node", node, "--slurm-version", "24.11",
				"--inventory-out", tc.out, "--out", "-"); err != nil {
				t.Fatalf("case %d node %s: %v\n%s", i, node, err, out)
			}
		}
		fi, err := os.Stat(tc.out)
		if err != nil || fi.IsDir() != tc.isDir {
			t.Fatalf("case %d: %s: %v, directory=%v, want directory=%v", i, tc.out, err, err == nil && fi.IsDir(), tc.isDir)
		}
		c, err := inventory.LoadPath(tc.out)
		if err != nil || len(c.Nodes) != len(tc.nodes) {
			t.Errorf("case %d: %s holds %d nodes (%v), want %d", i, tc.out, len(c.Nodes), err, len(tc.nodes))
		}
	}
	file := filepath.Join(dir, "one.json")
	if _, err := run(t, "gres", "generate", "--nvml=mock:dgxa100", "--node", "g1", "--inventory-out", file+"/", "--out", "-"); err == nil || !strings.Contains(err.Error(), "ends in / but is a file") {
		t.Errorf("a file named with a trailing /: %v", err)
	}
}

// node-line prints the Gres= that generate writes into gres.conf's comment, for each
// shard unit, so slurm.conf can take it without copying by hand.
func TestGresNodeLineMatchesGenerate(t *testing.T) {
	for _, unit := range []string{"1G", "2G"} {
		gen, err := run(t, "gres", "generate", "--nvml=mock:dgxa100", "--node", "a1", "--shard-unit", unit)
		if err != nil {
			t.Fatal(err)
		}
		line, err := run(t, "gres", "node-line", "--nvml=mock:dgxa100", "--node", "a1", "--shard-unit", unit)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(line, "NodeName=a1 Gres=gpu:") || !strings.Contains(gen, "# slurm.conf: "+line) {
			t.Errorf("--shard-unit %s: node-line printed %q; generate wrote:\n%s", unit, line, gen)
		}
		val, err := run(t, "gres", "node-line", "--nvml=mock:dgxa100", "--node", "a1", "--shard-unit", unit, "--value")
		if err != nil || "NodeName=a1 Gres="+val != line {
			t.Errorf("--value printed %q (%v), want the Gres= of %q", val, err, line)
		}
	}
}

// gres generate and diff take ShardUnit and ShardTypes from gpumem.conf, as gpumemd
// does, so diff agrees with what gpumemd wrote on a per-gpu site; flags still win.
func TestGresDefaultsFromGpumemConf(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "gpumem.conf")
	os.WriteFile(conf, []byte("ShardUnit = 2GiB\nShardTypes = per-gpu\n"), 0o644)
	out, err := run(t, "gres", "generate", "--config", conf, "--nvml=mock:dgxh100", "--node", "h1", "--slurm-version", "24.11")
	if err != nil || !strings.Contains(out, "shard:h100_g0:40") {
		t.Fatalf("generate with gpumem.conf's 2GiB per-gpu shards: %v\n%s", err, out)
	}
	out, err = run(t, "gres", "generate", "--config", conf, "--nvml=mock:dgxh100", "--node", "h1", "--shard-unit", "1G", "--shard-types", "none", "--slurm-version", "24.11")
	if err != nil || !strings.Contains(out, "Gres=gpu:h100:8,shard:h100:640") {
		t.Fatalf("flags over gpumem.conf: %v\n%s", err, out)
	}
	gres := filepath.Join(t.TempDir(), "gres.conf")
	if _, err := run(t, "gres", "generate", "--config", conf, "--nvml=mock:dgxh100", "--node", "h1", "--slurm-version", "24.11", "--out", gres); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "gres", "diff", "--config", conf, "--nvml=mock:dgxh100", "--node", "h1", "--slurm-version", "24.11", "--current", gres); err != nil {
		t.Fatalf("diff with the same gpumem.conf: %v\n%s", err, out)
	}
}
