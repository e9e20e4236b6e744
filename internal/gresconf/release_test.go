package gresconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/slurmrel"
)

func TestParseRelease(t *testing.T) {
	for in, want := range map[string]slurmrel.Version{
		"22.05.8":           slurmrel.V(22, 5, 8),
		"slurm-wlm 22.05.8": slurmrel.V(22, 5, 8),
		"slurm 24.11.5":     slurmrel.V(24, 11, 5),
		"24.11":             slurmrel.V(24, 11, 0),
		"24.11.0-0rc1":      slurmrel.V(24, 11, 0),
	} {
		got, err := slurmrel.ParseVersion(in)
		if err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "24", "x.y", "22.05.8.1", "slurm -1.2"} {
		if _, err := slurmrel.ParseVersion(in); err == nil || !strings.Contains(err.Error(), "want a version such as") {
			t.Errorf("ParseVersion(%q): %v, want an error saying what is accepted", in, err)
		}
	}
}

func TestSplitsMultipleFilesBeforeTheFix(t *testing.T) {
	for r, want := range map[slurmrel.Version]bool{
		slurmrel.Version{}: false, slurmrel.V(22, 5, 8): true, slurmrel.V(23, 2, 6): true, slurmrel.V(23, 2, 7): false, slurmrel.V(23, 11, 0): false, slurmrel.V(24, 11, 5): false,
	} {
		if got := splitsMultipleFiles(r); got != want {
			t.Errorf("splitsMultipleFiles(%v) = %v, want %v", r, got, want)
		}
	}
}

// migLines are the rendered gres.conf lines of the lab's MIG node n2.
func migLines(t *testing.T, opt Options) []string {
	t.Helper()
	b, err := Render(lab(), opt)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "NodeName=n2 ") {
			out = append(out, l)
		}
	}
	return out
}

func TestMIGShapeFollowsRelease(t *testing.T) {
	old := migLines(t, Options{Slurm: slurmrel.V(22, 5, 8)})
	want := []string{
		"NodeName=n2 Name=gpu Type=3g.20gb File=/dev/nvidia-caps/nvidia-cap12",
		"NodeName=n2 Name=gpu Type=1g.5gb File=/dev/nvidia-caps/nvidia-cap21",
	}
	if strings.Join(old, "\n") != strings.Join(want, "\n") {
		t.Errorf("22.05 MIG lines:\n%s\nwant:\n%s", strings.Join(old, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range []slurmrel.Version{{}, slurmrel.V(24, 11, 5)} {
		for _, l := range migLines(t, Options{Slurm: r}) {
			if !strings.Contains(l, " MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/") {
				t.Errorf("release %v: %q, want MultipleFiles with the GPU and its caps files", r, l)
			}
		}
	}
}

// TestInstalledSlurmdSeesOneGPUPerMIGInstance asks the installed slurmd what it would
// report to slurmctld for the MIG node, with gres/shard configured as gpumem always
// has it: one gpu record per MIG instance, never one per device file.
func TestInstalledSlurmdSeesOneGPUPerMIGInstance(t *testing.T) {
	rel, err := DetectRelease("")
	if err != nil {
		t.Skipf("no slurmd to ask (%v)", err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	text := "ClusterName=t\nSlurmctldHost=localhost\nGresTypes=gpu,shard\nSlurmdParameters=config_overrides\n" +
		"SlurmdSpoolDir=" + dir + "/spool-%n\n" +
		"NodeName=n2 NodeHostname=localhost CPUs=8 Gres=gpu:3g.20gb:1,gpu:1g.5gb:1 State=UNKNOWN\n" +
		"PartitionName=p Nodes=n2 Default=YES\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"nvidia0", "nvidia-caps/nvidia-cap12", "nvidia-caps/nvidia-cap13", "nvidia-caps/nvidia-cap21", "nvidia-caps/nvidia-cap22"} {
		p := filepath.Join(dir, "dev", f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var mig inventory.Cluster
	for _, n := range lab().Nodes {
		if n.Name == "n2" {
			mig.Nodes = append(mig.Nodes, n)
		}
	}
	gres, err := Render(mig, Options{DevPrefix: filepath.Join(dir, "dev"), NoCores: true, Slurm: rel})
	if err != nil {
		t.Fatal(err)
	}
	reports, err := Slurmd{SlurmConf: conf, Nodes: []string{"n2"}}.Check(gres)
	if err != nil {
		t.Fatalf("slurmd %v: %v", rel, err)
	}
	types := map[string]int{}
	for _, g := range reports[0].Gres {
		if strings.Contains(g, "Name=gpu ") {
			types[field(g, "Type")]++
		}
	}
	if types["3g.20gb"] != 1 || types["1g.5gb"] != 1 || len(types) != 2 {
		t.Errorf("slurmd %v reports gpu records %v, want one 3g.20gb and one 1g.5gb:\n%s", rel, types, strings.Join(reports[0].Gres, "\n"))
	}
}

func field(line, key string) string {
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok && k == key {
			return v
		}
	}
	return ""
}

func TestCheckCopiesWhatSlurmdReadsBesideSlurmConf(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	for name, body := range map[string]string{"slurm.conf": "ClusterName=t\n", "slurm.key": "secret", "cgroup.conf": "CgroupPlugin=disabled\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyConfDir(filepath.Join(src, "slurm.conf"), dst); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"slurm.conf", "slurm.key", "cgroup.conf"} {
		if _, err := os.Stat(filepath.Join(dst, name)); err != nil {
			t.Errorf("%s not copied: %v", name, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dst, "slurm.key")); err == nil && fi.Mode().Perm() != 0o600 {
		t.Errorf("slurm.key copied with mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(dst, "topology.conf")); err == nil {
		t.Error("topology.conf appeared although there was none to copy")
	}
}
