package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Sizes on the command line take their unit, as in the request language; a bare
// number is refused with what would be accepted, never read as MiB.
func TestSizesNeedTheirUnit(t *testing.T) {
	for _, args := range [][]string{
		{"mig", "plan", "--model", "h100-80gb", "20"},
		{"gres", "generate", "--nvml=mock:dgxa100", "--node", "a1", "--shard-unit", "1024"},
		{"steer", "--once", "--dry-run", "--shard-unit", "1024"},
	} {
		_, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "bare number is not accepted") || !strings.Contains(err.Error(), "20g") {
			t.Errorf("gpumemctl %s: %v; want a refusal naming the accepted forms", strings.Join(args, " "), err)
		}
	}
	if out, err := run(t, "gres", "generate", "--nvml=mock:dgxa100", "--node", "a1", "--shard-unit", "2G"); err != nil || !strings.Contains(out, "shard:") {
		t.Errorf("--shard-unit 2G: %v\n%s", err, out)
	}
}

// The old --shard-unit-mib still sets the same unit, so scripts keep working.
func TestShardUnitMiBIsAnAlias(t *testing.T) {
	for args, want := range map[string]int64{"--shard-unit=2G": 2048, "--shard-unit-mib=512": 512, "": 1024} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		mib := int64(1024)
		addShardUnit(fs, &mib, "unit")
		var a []string
		if args != "" {
			a = []string{args}
		}
		if err := fs.Parse(a); err != nil || mib != want {
			t.Errorf("%q: %d, %v; want %d", args, mib, err, want)
		}
	}
}

// -o is the output flag of inventory and jobs too; the old flags still work and give
// the same output; a format a command lacks is refused naming those it has.
func TestOutputFlag(t *testing.T) {
	table, err := run(t, "inventory", "--nvml=mock:dgxa100", "--node", "a1", "-o", "table")
	if err != nil || !strings.Contains(table, "a1") {
		t.Fatalf("inventory -o table: %v\n%s", err, table)
	}
	old, err := run(t, "inventory", "--nvml=mock:dgxa100", "--node", "a1", "--format", "table")
	if err != nil || !strings.HasSuffix(old, table) {
		t.Errorf("inventory --format table differs from -o table:\n%s\nvs\n%s", old, table)
	}
	js, err := run(t, "inventory", "--nvml=mock:dgxa100", "--node", "a1", "-o", "json")
	if err != nil || !strings.HasPrefix(strings.TrimSpace(js), "{") {
		t.Errorf("inventory -o json: %v\n%s", err, js)
	}
	for _, args := range [][]string{{"inventory", "--nvml=mock:dgxa100", "-o", "csv"}, {"jobs", "-o", "yaml"}} {
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "want ") {
			t.Errorf("gpumemctl %s: %v; want a refusal naming the formats", strings.Join(args, " "), err)
		}
	}
}

// --sizes takes GPU memory as gpu:mem does: units required, the first given replaces
// the default, repeats count, and shards round up as the plugins round a request.
func TestSizeList(t *testing.T) {
	s := sizeList{mib: []int64{10 << 10}}
	for _, v := range []string{"5G,5g", "10GiB"} {
		if err := s.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.String(); got != "5G,5G,10G" {
		t.Errorf("sizes %q, want 5G,5G,10G", got)
	}
	if got := fmt.Sprint(s.shards(2048)); got != "[3 3 5]" {
		t.Errorf("in 2G shards: %s, want [3 3 5]", got)
	}
	if err := s.Set("20"); err == nil || !strings.Contains(err.Error(), "a bare number is not accepted") {
		t.Errorf("a bare 20: %v", err)
	}
}
