package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseMIGSection(t *testing.T) {
	c, err := ParseMIG([]byte(`
ShardUnit = 1GiB
[gpumemd]
Drain = yes
[mig]
Desired = /etc/slurm/gpumem-mig.d
Apply = yes
IdleTimeout = 30m
Reload = systemctl restart slurmd
KeepWhole = 0.5
`))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultMIG()
	want.Desired, want.Apply, want.IdleTimeout, want.Reload, want.KeepWhole = "/etc/slurm/gpumem-mig.d", true, 30*time.Minute, "systemctl restart slurmd", 0.5
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	if d, err := LoadMIG(filepath.Join(t.TempDir(), "none.conf")); err != nil || !reflect.DeepEqual(d, DefaultMIG()) {
		t.Fatalf("missing file: %+v, %v", d, err)
	}
}

func TestParseMIGErrors(t *testing.T) {
	c, err := ParseMIG([]byte("[mig]\nApply = sure\nKeepWhole = 1.5\nIdleTimeout = 0s\nDesired = relative/dir\nDrain = yes\n"))
	for _, want := range []string{`apply = "sure": want yes or no`, `keepwhole = "1.5": want a share from 0 to 1`,
		`idletimeout = "0s": want a duration`, `desired = "relative/dir"`, `unknown key "drain"`} {
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), want) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
	}
	if c.Apply || c.KeepWhole != 0.25 {
		t.Errorf("bad keys changed settings: %+v", c)
	}
}

// The documented example's [mig] section is the defaults; keep the two in step.
func TestExampleMIGSectionIsTheDefaults(t *testing.T) {
	c, err := LoadMIG(filepath.Join("..", "..", "slurm-conf", "gpumem.conf"))
	if err != nil || !reflect.DeepEqual(c, DefaultMIG()) {
		t.Fatalf("slurm-conf/gpumem.conf [mig]: %+v, %v; want %+v", c, err, DefaultMIG())
	}
}
