package slurmconf

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRequiresSpank(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, text string
		want       bool
	}{
		{"required.conf", "required /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_gpumem.so /usr/sbin/gpumemd\n", true},
		{"optional.conf", "optional /usr/lib/slurm/spank_gpumem.so /usr/sbin/gpumemd\n", false},
		{"comment.conf", "# required /usr/lib/slurm/spank_gpumem.so\n", false},
		{"other.conf", "required /usr/lib/slurm/spank_other.so\n", false},
		{"include.conf", "include d/*.conf\n", true},
	}
	write("d/a.conf", "optional x.so\n")
	write("d/b.conf", "  Required spank_gpumem.so args # comment\n")
	for _, c := range cases {
		p := write(c.name, c.text)
		got, err := RequiresSpank(p, "spank_gpumem.so")
		if err != nil || got != c.want {
			t.Errorf("%s: got %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	loop := write("loop.conf", "include loop.conf\n")
	if _, err := RequiresSpank(loop, "spank_gpumem.so"); err == nil {
		t.Errorf("an include loop was not refused")
	}
	if _, err := RequiresSpank(filepath.Join(dir, "missing.conf"), "spank_gpumem.so"); err == nil {
		t.Errorf("a missing plugstack.conf gave no error")
	}
	c := &Conf{Params: map[string]string{}}
	if got := PlugStackPath(c, "/etc/slurm/slurm.conf"); got != "/etc/slurm/plugstack.conf" {
		t.Errorf("default plugstack path %s", got)
	}
	c.Params["plugstackconfig"] = "/x/p.conf"
	if got := PlugStackPath(c, "/etc/slurm/slurm.conf"); got != "/x/p.conf" {
		t.Errorf("PlugStackConfig path %s", got)
	}
}
