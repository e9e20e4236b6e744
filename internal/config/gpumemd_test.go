package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseGpumemdSection(t *testing.T) {
	c, err := ParseGpumemd([]byte(`
ShardUnit = 1GiB
[gpumemd]
NVML = mock:dgxh100
Listen = 127.0.0.1:9402
PollInterval = 2s
WriteGres = yes
SlurmVersion = 22.05.8
UsagePolicy = Kill
UsageGrace = 90s
Drain = yes
Resume = yes
CriticalXIDs = 48, 79
HistoryDB =
FragmentationSizes = 10G,20G
`))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultGpumemd()
	want.NVML, want.Listen, want.PollInterval, want.WriteGres = "mock:dgxh100", "127.0.0.1:9402", 2*time.Second, true
	want.SlurmVersion = "22.05.8"
	want.UsagePolicy, want.UsageGrace, want.Drain, want.Resume = "kill", 90*time.Second, true, true
	want.CriticalXIDs, want.HistoryDB, want.FragmentationSizesMiB = []int{48, 79}, "", []int64{10240, 20480}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
}

func TestParseGpumemdErrorsNameKeyAndChoices(t *testing.T) {
	c, err := ParseGpumemd([]byte("[gpumemd]\nDrain = yse\nUsagePolicy = nuke\nPollInterval = 0s\nListen = 9402\nColour = blue\nCriticalXIDs = 48,x\n"))
	for _, want := range []string{`Drain = "yse": want yes or no`, `UsagePolicy = "nuke": want record, warn or kill`,
		`PollInterval = "0s": want a duration from 10ms`, `Listen = "9402": want HOST:PORT`, `unknown key "colour"`, `"x" is not an XID`} {
		// Keys are read case-insensitively and reported as ini.v1 folds them.
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(want)) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
	}
	if c.Drain || c.UsagePolicy != "record" {
		t.Errorf("bad keys changed settings: %+v", c)
	}
}

func TestLoadGpumemdMissingFileIsDefault(t *testing.T) {
	c, err := LoadGpumemd(filepath.Join(t.TempDir(), "none.conf"))
	if err != nil || !reflect.DeepEqual(c, DefaultGpumemd()) {
		t.Fatalf("got %+v, %v", c, err)
	}
	p := filepath.Join(t.TempDir(), "gpumem.conf")
	os.WriteFile(p, []byte("[gpumemd]\nDrain = maybe\n"), 0o644)
	if _, err := LoadGpumemd(p); err == nil || !strings.Contains(err.Error(), p+" [gpumemd]: line 2: Drain = \"maybe\"") {
		t.Fatalf("error %v does not name the file, section and key", err)
	}
}

// The shipped example must say exactly the defaults, or the documentation lies.
func TestExampleIsTheDefaults(t *testing.T) {
	b, err := os.ReadFile("../../packaging/examples/gpumemd.conf")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseGpumemd(b)
	if err != nil || !reflect.DeepEqual(c, DefaultGpumemd()) {
		t.Fatalf("example gives %+v, %v\nwant the defaults %+v", c, err, DefaultGpumemd())
	}
}

func TestFenceKeys(t *testing.T) {
	c, err := ParseGpumemd([]byte("[gpumemd]\nFenceFailure = Drain\nFenceCgroupScope = /system.slice/n1_slurmstepd.scope/\nFenceCgroupRoot = /sys/fs/cgroup/unified\n"))
	if err != nil || c.FenceFailure != "drain" || c.FenceCgroupScope != "system.slice/n1_slurmstepd.scope" || c.FenceCgroupRoot != "/sys/fs/cgroup/unified" {
		t.Fatalf("got %q %q %q, %v", c.FenceFailure, c.FenceCgroupScope, c.FenceCgroupRoot, err)
	}
	if d := DefaultGpumemd(); d.FenceFailure != "fail" || d.FenceCgroupScope != "" || d.FenceTimeout != 90*time.Second {
		t.Fatalf("defaults %q %q", d.FenceFailure, d.FenceCgroupScope)
	}
	for _, bad := range []string{"FenceFailure = ignore", "FenceCgroupScope = ../etc", "FenceCgroupScope = a/./b", "FenceCgroupRoot = relative"} {
		if _, err := ParseGpumemd([]byte("[gpumemd]\n" + bad + "\n")); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// TestOneGrammarInEverySection: a duration reads alike in every section (a bare number
// is seconds in [gpumemd] as at the top level) and a size as the request language reads
// it (1.5g, 1gb), wherever gpumem.conf takes one.
func TestOneGrammarInEverySection(t *testing.T) {
	doc := "ShardUnit = 1.5g\nReloadInterval = 30\nTargetSizes = 1gb,20\n[gpumemd]\nPollInterval = 30\nFragmentationSizes = 1.5g,2048\n[mig]\nIdleTimeout = 90\n"
	c, err := Parse([]byte(doc))
	if err != nil || c.ShardUnitMiB != 1536 || c.ReloadInterval != 30*time.Second || !reflect.DeepEqual(c.TargetSizesMiB, []int64{954, 20}) {
		t.Errorf("top level: %+v, %v", c, err)
	}
	g, err := ParseGpumemd([]byte(doc))
	if err != nil || g.PollInterval != 30*time.Second || !reflect.DeepEqual(g.FragmentationSizesMiB, []int64{1536, 2048}) {
		t.Errorf("[gpumemd]: %+v, %v", g, err)
	}
	if m, err := ParseMIG([]byte(doc)); err != nil || m.IdleTimeout != 90*time.Second {
		t.Errorf("[mig]: %+v, %v", m, err)
	}
}
