package gresconf

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/slurmrel"
)

func lab() inventory.Cluster {
	return inventory.Cluster{Nodes: []inventory.Node{
		{Name: "n3", GPUs: []inventory.GPU{
			{Index: 0, Minor: 0, Type: "l4", MemoryMiB: 23034},
			{Index: 1, Minor: 1, Type: "l4", MemoryMiB: 23034, Sharing: inventory.SharingWhole},
		}},
		{Name: "n1", GPUs: []inventory.GPU{
			{Index: 0, Minor: 0, Type: "h100", MemoryMiB: 81559, Cores: "0-3"},
			{Index: 1, Minor: 1, Type: "h100", MemoryMiB: 81559, Cores: "4-7"},
		}},
		{Name: "n2", GPUs: []inventory.GPU{{Index: 0, Minor: 0, Type: "a100", MemoryMiB: 40960, MIG: true,
			Instances: []inventory.MIGInstance{
				{Profile: "3g.20gb", MemoryMiB: 20096, GI: 1, CI: 0, Start: 4, Slices: 3,
					Files: []string{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap12", "/dev/nvidia-caps/nvidia-cap13"}},
				{Profile: "1g.5gb", MemoryMiB: 4864, GI: 2, CI: 0, Start: 0, Slices: 1,
					Files: []string{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22"}},
			}}}},
	}}
}

func TestRenderLab(t *testing.T) {
	got, err := Render(lab(), Options{DevPrefix: "/lab/dev/"})
	if err != nil {
		t.Fatal(err)
	}
	want := `# slurm.conf: NodeName=n1 Gres=gpu:h100:2,shard:h100:158
NodeName=n1 Name=gpu Type=h100 File=/lab/dev/nvidia0 Cores=0-3
NodeName=n1 Name=gpu Type=h100 File=/lab/dev/nvidia1 Cores=4-7
NodeName=n1 Name=shard Count=79 File=/lab/dev/nvidia0
NodeName=n1 Name=shard Count=79 File=/lab/dev/nvidia1
# slurm.conf: NodeName=n2 Gres=gpu:3g.20gb:1,gpu:1g.5gb:1
NodeName=n2 Name=gpu Type=3g.20gb MultipleFiles=/lab/dev/nvidia0,/lab/dev/nvidia-caps/nvidia-cap12,/lab/dev/nvidia-caps/nvidia-cap13
NodeName=n2 Name=gpu Type=1g.5gb MultipleFiles=/lab/dev/nvidia0,/lab/dev/nvidia-caps/nvidia-cap21,/lab/dev/nvidia-caps/nvidia-cap22
# slurm.conf: NodeName=n3 Gres=gpu:l4:2,shard:l4:22
NodeName=n3 Name=gpu Type=l4 File=/lab/dev/nvidia0
NodeName=n3 Name=gpu Type=l4 File=/lab/dev/nvidia1
NodeName=n3 Name=shard Count=22 File=/lab/dev/nvidia0
`
	body := string(got)[strings.Index(string(got), "# slurm.conf"):]
	if body != want {
		t.Fatalf("gres.conf:\n%s\nwant:\n%s", body, want)
	}
	if !strings.Contains(string(got), "One shard = 1024 MiB") {
		t.Error("header does not say what a shard is")
	}
}

func TestRenderRejectsBadOptionsAndInventories(t *testing.T) {
	if _, err := Render(lab(), Options{DevPrefix: "dev"}); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("relative dev prefix: %v", err)
	}
	if _, err := Render(lab(), Options{ShardUnitMiB: -1}); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Errorf("negative shard unit: %v", err)
	}
	bad := inventory.Cluster{Nodes: []inventory.Node{{Name: "x", GPUs: []inventory.GPU{{Type: "h100"}}}}}
	if _, err := Render(bad, Options{}); err == nil {
		t.Error("a GPU without memory rendered")
	}
	// NodeGres, the other way inventory values reach Slurm's files, renders only a node
	// that passes the same checks.
	evil := inventory.Node{Name: "x", GPUs: []inventory.GPU{{Type: "h100\nPartitionName=evil", MemoryMiB: 81920}}}
	if g, err := NodeGres(evil, Options{}); err == nil || !strings.Contains(err.Error(), "type") {
		t.Errorf("NodeGres of a type with a newline: %q, %v", g, err)
	}
	out, err := Render(lab(), Options{NoCores: true, ShardUnitMiB: 2048})
	if err != nil || strings.Contains(string(out), "Cores=") || !strings.Contains(string(out), "Count=39 ") {
		t.Errorf("NoCores and a 2 GiB unit: %v\n%s", err, out)
	}
}

func TestDiff(t *testing.T) {
	if d := Diff([]byte("a\nb\n"), []byte("a\nb\n"), "x", "y"); d != "" {
		t.Fatalf("equal files differ: %q", d)
	}
	d := Diff([]byte("a\nb\nc\n"), []byte("a\nB\nc\nd\n"), "old", "new")
	want := "--- old\n+++ new\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n"
	if d != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", d, want)
	}
}

// TestDiffPatches: what Diff prints is a unified diff that patch(1) applies to the old
// file to give the new one exactly: far-apart changes in hunks of their own, files
// that are empty or lack their last newline, and random edits of a real gres.conf.
func TestDiffPatches(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("SKIP: patch(1) is not installed (Debian's base has it): cannot check that it reads the diff")
	}
	gres, err := Render(lab(), Options{DevPrefix: "/lab/dev/"})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("line\n", 20)
	pairs := [][2]string{
		{"a\nb\nc\n", "a\nB\nc\nd\n"},
		{"", "new\n"},
		{"old\n", ""},
		{"x\n" + long + "y\n", "X\n" + long + "Y\n"},
		{"a\nb", "a\nb\n"},
		{"a\nb\n", "a\nc"},
		{string(gres), ""},
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	ls := strings.SplitAfter(string(gres), "\n")
	for range 30 {
		var b strings.Builder
		for _, l := range ls {
			switch rnd.IntN(6) {
			case 0: // removed
			case 1:
				b.WriteString("# added\n" + l)
			case 2:
				b.WriteString(strings.ToUpper(l))
			default:
				b.WriteString(l)
			}
		}
		pairs = append(pairs, [2]string{string(gres), b.String()})
	}
	dir := t.TempDir()
	for _, p := range pairs {
		old, patched := filepath.Join(dir, "gres.conf"), filepath.Join(dir, "patched")
		if err := os.WriteFile(old, []byte(p[0]), 0o644); err != nil {
			t.Fatal(err)
		}
		d := Diff([]byte(p[0]), []byte(p[1]), old, "generated")
		cmd := exec.Command("patch", "-s", "-o", patched, old)
		cmd.Stdin = strings.NewReader(d)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("patch refused the diff of %q to %q: %v %s\n%s", p[0], p[1], err, out, d)
			continue
		}
		if got, _ := os.ReadFile(patched); string(got) != p[1] {
			t.Errorf("patched %q with\n%s\ngot %q, want %q", p[0], d, got, p[1])
		}
	}
}

// TestSlurmdAcceptsWhatWeRender runs the real slurmd -G on a rendered gres.conf.
// With ShardTypes each shared GPU gets a Type of its own (model _g NVML index) on its
// gpu and shard records (slurmd gives a shard its gpu's Type, so they must agree), and
// NodeGres lists them one by one; the whole-only L4 and the MIG node are unchanged and
// the counts are gresconf's one rounding (Shards).
func TestRenderTypedShards(t *testing.T) {
	got, err := Render(lab(), Options{DevPrefix: "/lab/dev/", ShardTypes: true})
	if err != nil {
		t.Fatal(err)
	}
	body := string(got)[strings.Index(string(got), "# slurm.conf"):]
	for _, want := range []string{
		"# slurm.conf: NodeName=n1 Gres=gpu:h100_g0:1,gpu:h100_g1:1,shard:h100_g0:79,shard:h100_g1:79\n",
		"NodeName=n1 Name=gpu Type=h100_g0 File=/lab/dev/nvidia0 Cores=0-3\n",
		"NodeName=n1 Name=shard Type=h100_g0 Count=79 File=/lab/dev/nvidia0\n",
		"NodeName=n1 Name=shard Type=h100_g1 Count=79 File=/lab/dev/nvidia1\n",
		"# slurm.conf: NodeName=n2 Gres=gpu:3g.20gb:1,gpu:1g.5gb:1\n",
		// The whole-only L4 keeps its model type: no shard record shares its File.
		"# slurm.conf: NodeName=n3 Gres=gpu:l4_g0:1,gpu:l4:1,shard:l4_g0:22\n",
		"NodeName=n3 Name=gpu Type=l4 File=/lab/dev/nvidia1\n",
		"NodeName=n3 Name=shard Type=l4_g0 Count=22 File=/lab/dev/nvidia0\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("typed gres.conf lacks %q:\n%s", want, body)
		}
	}
	if n := strings.Count(body, "Name=shard"); n != 3 {
		t.Errorf("%d shard records; want 3 (two H100s, one shared L4):\n%s", n, body)
	}
	if strings.Contains(body, "Name=shard Count") {
		t.Errorf("an untyped shard record left:\n%s", body)
	}
	// Untyped is the default, byte for byte what it was.
	plain, _ := Render(lab(), Options{DevPrefix: "/lab/dev/"})
	if strings.Contains(string(plain), "Type=g") || !strings.Contains(string(plain), "Gres=gpu:h100:2,shard:h100:158\n") {
		t.Errorf("untyped render changed:\n%s", plain)
	}
	// Slurm 22.05 runs jobs without their shards on typed shards: refused, with why.
	if _, err := Render(lab(), Options{ShardTypes: true, Slurm: slurmrel.V(22, 5, 8)}); err == nil ||
		!strings.Contains(err.Error(), "needs Slurm 24.11.0 or later") || !strings.Contains(err.Error(), "set ShardTypes = none") {
		t.Errorf("typed shards for 22.05.8: %v; want a refusal naming 24.11 and ShardTypes = none", err)
	}
	if _, err := Render(lab(), Options{ShardTypes: true, Slurm: slurmrel.V(24, 11, 5)}); err != nil {
		t.Errorf("typed shards for 24.11.5: %v", err)
	}
}

func TestSlurmdAcceptsWhatWeRender(t *testing.T) {
	// Without slurmd nothing here can be checked: the test skips as a whole, not
	// through its subtests under a parent that would report PASS.
	if _, err := exec.LookPath("slurmd"); err != nil {
		t.Skip("slurmd not installed (apt-get install slurmd)")
	}
	t.Run("untyped", func(t *testing.T) { slurmdAccepts(t, false) })
	t.Run("typed", func(t *testing.T) { slurmdAccepts(t, true) })
}

func slurmdAccepts(t *testing.T, typed bool) {
	if _, err := exec.LookPath("slurmd"); err != nil {
		t.Skip("slurmd not installed (apt-get install slurmd)")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	opt := Options{DevPrefix: filepath.Join(dir, "dev"), NoCores: true, ShardTypes: typed}
	gres := func(n int) string { g, _ := NodeGres(sorted(lab()).Nodes[n], opt); return g }
	text := "ClusterName=t\nSlurmctldHost=localhost\nGresTypes=gpu,shard\nSlurmdParameters=config_overrides\n" +
		"SlurmdSpoolDir=" + dir + "/spool-%n\n" +
		"NodeName=n1 NodeHostname=localhost CPUs=8 Gres=" + gres(0) + " State=UNKNOWN\n" +
		"NodeName=n2 NodeHostname=localhost CPUs=8 Gres=" + gres(1) + " State=UNKNOWN\n" +
		"NodeName=n3 NodeHostname=localhost CPUs=8 Gres=" + gres(2) + " State=UNKNOWN\n" +
		"PartitionName=p Nodes=n[1-3] Default=YES\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// Plain files stand in for device nodes: slurmd warns but accepts them.
	for _, f := range []string{"nvidia0", "nvidia1", "nvidia-caps/nvidia-cap12", "nvidia-caps/nvidia-cap13", "nvidia-caps/nvidia-cap21", "nvidia-caps/nvidia-cap22"} {
		p := filepath.Join(dir, "dev", f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good, err := Render(lab(), opt)
	if err != nil {
		t.Fatal(err)
	}
	v := Slurmd{SlurmConf: conf, Nodes: []string{"n1", "n2", "n3"}}
	reports, err := v.Check(good)
	if err != nil {
		t.Fatalf("slurmd rejected the rendered gres.conf: %v", err)
	}
	for _, r := range reports {
		if len(r.Gres) == 0 {
			t.Errorf("node %s: slurmd reported no GRES", r.Node)
		}
		if typed && r.Node == "n1" && !strings.Contains(strings.Join(r.Gres, "\n"), "Name=shard Type=h100_g1 Count=79") {
			t.Errorf("node n1: slurmd did not register typed shards: %q", r.Gres)
		}
	}
	if _, err := v.Check(append(append([]byte(nil), good...), "NodeName=n1 Name=gpu Type=x File=/nonexistent/nvidia9\n"...)); err == nil || !strings.Contains(err.Error(), "device files missing: /nonexistent/nvidia9") {
		t.Fatalf("a missing device file: %v", err)
	}
	bad := append(append([]byte(nil), good...), "NodeName=n1 Name=gpu Typo=h100\n"...)
	if _, err := v.Check(bad); err == nil || !strings.Contains(err.Error(), "Typo") {
		t.Fatalf("slurmd accepted a broken gres.conf: %v", err)
	}
}

func TestCheckWithoutSlurmdWarnsAndPasses(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if warned, err := (Check{SlurmConf: "/etc/slurm/slurm.conf", Nodes: []string{"n1"}}).Validate(lab(), []byte("x")); err != nil || !warned {
		t.Fatalf("without slurmd: err %v, warned %v", err, warned)
	}
}

// A check's slurmd logs into its own folder, never into the node's live log.
func TestPrivateLogs(t *testing.T) {
	got := string(privateLogs([]byte("ClusterName=c\n slurmdlogfile = /var/log/slurm/slurmd-%n.log\nSlurmdDebug=info\n"), "/tmp/x"))
	if strings.Contains(got, "/var/log") || !strings.Contains(got, "SlurmdLogFile=/tmp/x/slurmd-%n.log") || !strings.Contains(got, "SlurmdDebug=info") {
		t.Errorf("privateLogs:\n%s", got)
	}
	// Without a log file slurmd would log to syslog: the check names one of its own, and
	// keeps slurmd off syslog, once each.
	got = string(privateLogs([]byte("ClusterName=c\nSlurmdSyslogDebug=info"), "/tmp/x"))
	if got != "ClusterName=c\nSlurmdSyslogDebug=quiet\nSlurmdLogFile=/tmp/x/slurmd-%n.log\n" {
		t.Errorf("privateLogs without SlurmdLogFile:\n%s", got)
	}
}

// A configless slurm.conf Includes its node lines; slurmd -G in the scratch folder must
// find them there, or it retries the missing file for a minute.
func TestCheckCopiesIncludedFiles(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(src, "slurm.conf"), []byte("ClusterName=t\ninclude gpu-nodes.conf\nInclude /abs/elsewhere.conf\n"), 0o644)
	os.WriteFile(filepath.Join(src, "gpu-nodes.conf"), []byte("NodeName=g1 CPUs=8\nInclude more.conf\n"), 0o644)
	os.WriteFile(filepath.Join(src, "more.conf"), []byte("NodeName=g2 CPUs=8\n"), 0o644)
	if err := copyConfDir(filepath.Join(src, "slurm.conf"), dst); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"gpu-nodes.conf", "more.conf"} {
		if b, err := os.ReadFile(filepath.Join(dst, f)); err != nil || !strings.Contains(string(b), "NodeName=") {
			t.Errorf("%s not copied: %v %q", f, err, b)
		}
	}
	os.Remove(filepath.Join(src, "more.conf"))
	if err := copyConfDir(filepath.Join(src, "slurm.conf"), t.TempDir()); err == nil || !strings.Contains(err.Error(), "more.conf") {
		t.Errorf("a missing Included file: %v; want an error naming it", err)
	}
}

// Gres= counts a node's shards by the type slurmd reports them with (their GPU's) where
// typed shards were checked; before 24.11 it keeps one untyped count.
func TestNodeGresTypesShardsAsSlurmdReportsThem(t *testing.T) {
	n := inventory.Node{Name: "m1", GPUs: []inventory.GPU{
		{Index: 0, Minor: 0, Type: "a100", MemoryMiB: 40960},
		{Index: 1, Minor: 1, Type: "l4", MemoryMiB: 23034},
		{Index: 2, Minor: 2, Type: "a100", MemoryMiB: 40960},
		{Index: 3, Minor: 3, Type: "l4", MemoryMiB: 23034, Sharing: inventory.SharingWhole},
	}}
	for _, c := range []struct {
		rel  slurmrel.Version
		want string
	}{
		{slurmrel.Version{}, "gpu:a100:2,gpu:l4:2,shard:a100:80,shard:l4:22"},
		{slurmrel.V(24, 11, 5), "gpu:a100:2,gpu:l4:2,shard:a100:80,shard:l4:22"},
		// 23.11 saves the topology too: a backup taking over drained an untyped node.
		{slurmrel.V(23, 11, 11), "gpu:a100:2,gpu:l4:2,shard:a100:80,shard:l4:22"},
		{slurmrel.V(22, 5, 8), "gpu:a100:2,gpu:l4:2,shard:102"},
	} {
		got, err := NodeGres(n, Options{Slurm: c.rel})
		if err != nil || got != c.want {
			t.Errorf("Slurm %v: Gres=%q, %v; want %q", c.rel, got, err, c.want)
		}
	}
}
