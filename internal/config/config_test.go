package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseAllKeys(t *testing.T) {
	c, err := Parse([]byte(`
# every key, in the case the example file uses
ShardUnit = 2GiB
PlacementPolicy = best-fit
PreferMIG = yes
InventoryPath = /var/lib/gpumem/inventory
SlurmConf = /etc/slurm-llnl/slurm.conf
OnError = closed
LogLevel = debug
ReloadInterval = 30s

[gpumemd]
Listen = :9400
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{2048, "best-fit", true, "/var/lib/gpumem/inventory", "/etc/slurm-llnl/slurm.conf", Closed, LevelDebug, 30 * time.Second, nil, nil, ShardTypesNone, "gpumem", "/var/lib/gpumem/usage.json", 30 * time.Second, "/var/lib/gpumem/refusals.json", FenceOff}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
}

func TestParseEmptyIsDefault(t *testing.T) {
	c, err := Parse(nil)
	if err != nil || !reflect.DeepEqual(c, Default()) {
		t.Fatalf("got %+v, %v; want defaults", c, err)
	}
}

func TestParseCaseInsensitiveKeys(t *testing.T) {
	c, err := Parse([]byte("shardunit=512m\nONERROR=Closed\n"))
	if err != nil || c.ShardUnitMiB != 512 || c.OnError != Closed {
		t.Fatalf("got %+v, %v", c, err)
	}
}

func TestParseBadKeysKeepDefaultsAndSayWhy(t *testing.T) {
	c, err := Parse([]byte("ShardUnit = 0\nPlacementPolicy = Best Fit\nOnError = maybe\nLogLevel = loud\nPreferMIG = sometimes\nInventoryPath = relative/dir\nReloadInterval = 2h\nShardUnitt = 1g\nLogLevel2 = x\n"))
	if !reflect.DeepEqual(c, Default()) {
		t.Fatalf("bad keys changed the config: %+v", c)
	}
	for _, want := range []string{
		`line 1: ShardUnit = "0": want a size from 1MiB to 1TiB such as 1GiB or 512MiB`,
		`line 2: PlacementPolicy = "Best Fit": want a lower-case policy name`,
		`line 3: OnError = "maybe": want open (pass the job unchanged) or closed (refuse it)`,
		`line 4: LogLevel = "loud": want one of error, info, verbose, debug`,
		`line 5: PreferMIG = "sometimes": want yes or no`,
		`line 6: InventoryPath = "relative/dir": want an absolute path`,
		`line 7: ReloadInterval = "2h": want a duration from 0s to 1h`,
		`line 8: unknown key "ShardUnitt"; known keys: ShardUnit, PlacementPolicy`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
	}
}

// Policy is PlacementPolicy's old name: it still sets the placement policy, in any case,
// and is checked the same; a file that sets both is refused, naming both lines, and the
// placement policy keeps its default.
func TestPolicyIsPlacementPolicysOldName(t *testing.T) {
	for _, in := range []string{"Policy = best-fit\n", "policy = best-fit\n", "PlacementPolicy = best-fit\n", "placementpolicy=best-fit\n"} {
		c, err := Parse([]byte(in))
		if err != nil || c.PlacementPolicy != "best-fit" {
			t.Errorf("%q: got %q, %v; want best-fit", in, c.PlacementPolicy, err)
		}
	}
	if _, err := Parse([]byte("Policy = Best Fit\n")); err == nil || !strings.Contains(err.Error(), `line 1: Policy = "Best Fit": want a lower-case policy name`) {
		t.Errorf("a bad Policy: %v", err)
	}
	for _, in := range []string{
		"Policy = spread\nShardUnit = 2g\nPlacementPolicy = best-fit\n",
		"PlacementPolicy = best-fit\nShardUnit = 2g\nPolicy = spread\n",
	} {
		c, err := Parse([]byte(in))
		if c.PlacementPolicy != Default().PlacementPolicy || c.ShardUnitMiB != 2048 {
			t.Errorf("%q: got %+v; want the placement policy's default and ShardUnit applied", in, c)
		}
		want := "line 1: Policy and line 3: PlacementPolicy set the same key, so neither is taken: keep PlacementPolicy (Policy is its old name) and remove the other"
		if strings.HasPrefix(in, "Placement") {
			want = "line 3: Policy and line 1: PlacementPolicy set the same key"
		}
		if err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "same key") != 1 {
			t.Errorf("%q: error %v; want %q once", in, err, want)
		}
	}
}

func TestParseKeepsGoodKeysBesideBadOnes(t *testing.T) {
	c, err := Parse([]byte("ShardUnit = 4g\nOnError = never\n"))
	if err == nil || c.ShardUnitMiB != 4096 || c.OnError != Open {
		t.Fatalf("got %+v, %v; want ShardUnit applied, OnError default, an error", c, err)
	}
}

func TestParseNotINI(t *testing.T) {
	c, err := Parse([]byte("[unclosed\n"))
	if err == nil || !strings.Contains(err.Error(), "not an INI file") || !reflect.DeepEqual(c, Default()) {
		t.Fatalf("got %+v, %v", c, err)
	}
}

func TestReloadIntervalPlainSeconds(t *testing.T) {
	c, err := Parse([]byte("ReloadInterval = 5\n"))
	if err != nil || c.ReloadInterval != 5*time.Second {
		t.Fatalf("got %v, %v", c.ReloadInterval, err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if c, err := Load(filepath.Join(dir, "absent.conf")); err != nil || !reflect.DeepEqual(c, Default()) {
		t.Fatalf("missing file: %+v, %v; want defaults and no error", c, err)
	}
	p := filepath.Join(dir, "gpumem.conf")
	if err := os.WriteFile(p, []byte("PlacementPolicy = spread\nBogus = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), p) || c.PlacementPolicy != "spread" {
		t.Fatalf("got %+v, %v; want PlacementPolicy applied and an error naming the file", c, err)
	}
	if _, err := Load(dir); err == nil {
		t.Fatal("a directory read as config gave no error")
	}
}

// The documented example ships every key at its default; keep the two in step.
func TestExampleFileIsTheDefaults(t *testing.T) {
	path := filepath.Join("..", "..", "slurm-conf", "gpumem.conf")
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil || !reflect.DeepEqual(c, Default()) {
		t.Fatalf("slurm-conf/gpumem.conf: %+v, %v; want exactly the defaults %+v", c, err, Default())
	}
}

func TestPools(t *testing.T) {
	c, err := Parse([]byte("Pools = small:0-24g, big:24g-\n"))
	want := []Pool{{"small", 0, 24 << 10}, {"big", 24 << 10, 0}}
	if err != nil || !reflect.DeepEqual(c.Pools, want) {
		t.Fatalf("got %+v, %v; want %+v", c.Pools, err, want)
	}
	for in, msg := range map[string]string{
		"Pools = small":   `entry "small": want partition:min-max`,
		"Pools = :0-1g":   `entry ":0-1g": want partition:min-max`,
		"Pools = a:8g-4g": `entry "a:8g-4g": max is below min`,
		"Pools = a:x-":    `entry "a:x-": min: want 0, empty, or a size such as 24g`,
	} {
		c, err := Parse([]byte(in + "\n"))
		if err == nil || !strings.Contains(err.Error(), msg) || c.Pools != nil {
			t.Errorf("%s: got %+v, %v; want an error containing %q and no pools", in, c.Pools, err, msg)
		}
	}
}

func TestTargetSizes(t *testing.T) {
	c, err := Parse([]byte("TargetSizes = 5g, 10g,20480m\n"))
	if want := []int64{5 << 10, 10 << 10, 20 << 10}; err != nil || !reflect.DeepEqual(c.TargetSizesMiB, want) {
		t.Fatalf("got %v, %v; want %v", c.TargetSizesMiB, err, want)
	}
	if c, err := Parse([]byte("TargetSizes = 5g, lots\n")); err == nil || !strings.Contains(err.Error(), `"lots"`) || c.TargetSizesMiB != nil {
		t.Errorf("bad size: %v, %v; want an error quoting it and the default kept", c.TargetSizesMiB, err)
	}
}

func TestShardTypesAndPinning(t *testing.T) {
	c, err := Parse([]byte("ShardTypes = Per-GPU\nPinPolicy = best-fit\nUsageSnapshot = /run/u.json\nUsageMaxAge = 5\n"))
	if err != nil || c.ShardTypes != ShardTypesPerGPU || c.PinPolicy != "best-fit" || c.UsageSnapshot != "/run/u.json" || c.UsageMaxAge != 5*time.Second {
		t.Fatalf("got %+v, %v", c, err)
	}
	for in, msg := range map[string]string{
		"ShardTypes = typed":     "want none (untyped shards) or per-gpu",
		"UsageSnapshot = u.json": "want an absolute path",
		"UsageMaxAge = 0s":       "want a duration above 0s",
		"UsageMaxAge = 2h":       "at most 1h",
		"PinPolicy = Best Fit":   "lower-case policy name",
	} {
		c, err := Parse([]byte(in + "\n"))
		if err == nil || !strings.Contains(err.Error(), msg) || !reflect.DeepEqual(c, Default()) {
			t.Errorf("%s: got %+v, %v; want an error containing %q and the defaults kept", in, c, err, msg)
		}
	}
}

func TestRefusalCounts(t *testing.T) {
	for in, want := range map[string]string{
		"RefusalCounts = /run/gpumem/refusals.json": "/run/gpumem/refusals.json",
		"refusalcounts = None":                      "none",
	} {
		if c, err := Parse([]byte(in + "\n")); err != nil || c.RefusalCounts != want {
			t.Errorf("%s: got %q, %v; want %q", in, c.RefusalCounts, err, want)
		}
	}
	c, err := Parse([]byte("RefusalCounts = refusals.json\n"))
	if err == nil || !strings.Contains(err.Error(), "want an absolute path, or none") || c.RefusalCounts != Default().RefusalCounts {
		t.Errorf("relative path: got %q, %v; want an error and the default kept", c.RefusalCounts, err)
	}
}

// TestLoadRefusesWhatIsNotAConfigFile: a FIFO (which would block the reader until some
// process writes to it), a device and a file over MaxFileBytes are refused at once,
// each error naming the file; every reader of gpumem.conf goes through load.
func TestLoadRefusesWhatIsNotAConfigFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.conf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.conf")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxFileBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:        "not a regular file (a FIFO)",
		"/dev/zero": "not a regular file (a device)",
		big:         "more than the 1048576 allowed",
	} {
		done := make(chan error, 1)
		go func() {
			_, err := Load(path)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
				t.Errorf("Load(%s): %v; want an error naming the file and saying %q", path, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Load(%s) still reading after 10s", path)
		}
	}
	if c, err := LoadGpumemd(os.DevNull); err != nil || !reflect.DeepEqual(c, DefaultGpumemd()) {
		t.Errorf("LoadGpumemd(/dev/null) = %+v, %v; want the defaults", c, err)
	}
}

// TestErrorsShowKeysAsWritten: a key is named in the case the admin wrote it, with its
// line, in any section and however it was spelled; keys still match in any case.
func TestErrorsShowKeysAsWritten(t *testing.T) {
	doc := "# site settings\n\nshardUNIT = 2g\n[gpumemd]\n  PollInterval = often\n[MIG]\nKeepWhole: 2\n"
	if c, err := Parse([]byte(doc)); err != nil || c.ShardUnitMiB != 2048 {
		t.Errorf("shardUNIT = 2g: %v, %d MiB", err, c.ShardUnitMiB)
	}
	if _, err := ParseGpumemd([]byte(doc)); err == nil || !strings.Contains(err.Error(), `line 5: PollInterval = "often"`) {
		t.Errorf("[gpumemd]: %v", err)
	}
	if _, err := ParseMIG([]byte(doc)); err == nil || !strings.Contains(err.Error(), `line 7: KeepWhole = "2"`) {
		t.Errorf("[MIG]: %v", err)
	}
}
