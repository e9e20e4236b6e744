package slurmcli

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParsePendingGPUTypes(t *testing.T) {
	out := "11|gpu|gres/gpu:3g.20gb:2|(null)|2026-01-02T03:04:05\n12|gpu|gres/shard:20\n13|gpu,mig|gpu:1g.5gb:1,gres/shard:4\n14|gpu|gres/gpu:1\n15|gpu|gres:gpu:2g.10gb:1\n"
	got, err := ParsePendingGPUTypes(out)
	want := []PendingGPU{{"11", "3g.20gb", 2}, {"13", "1g.5gb", 1}, {"15", "2g.10gb", 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePendingGPUTypes = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"11|gpu", "11|gpu|gpu:3g.20gb:99999"} {
		if _, err := ParsePendingGPUTypes(bad); err == nil {
			t.Errorf("ParsePendingGPUTypes(%q) accepted", bad)
		}
	}
}

// ParsePendingGRES keeps the jobs that ask typed GPUs and no shards, with their submit
// time: a job with shards is ParsePending's, and an untyped gpu:1 has no one size.
func TestParsePendingGRES(t *testing.T) {
	out := "11|gpu|gres/gpu:3g.20gb:2|(null)|2026-01-02T03:04:05\n12|gpu|gres/shard:20|(null)|2026-01-02T03:04:06\n" +
		"13|gpu,mig|gpu:1g.5gb:1,gres/shard:4|(null)|2026-01-02T03:04:07\n14|gpu|gres/gpu:1|(null)|2026-01-02T03:04:08\n" +
		"15|gpu|gres:gpu:h100:2|n1|2026-01-02T03:04:09\n"
	got, err := ParsePendingGRES(out, time.UTC)
	want := []PendingGRES{
		{"11", "gres/gpu:3g.20gb:2", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"15", "gres:gpu:h100:2", time.Date(2026, 1, 2, 3, 4, 9, 0, time.UTC)},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePendingGRES = %v, %v; want %v", got, err, want)
	}
	if _, err := ParsePendingGRES("11|gpu|gres/gpu:3g.20gb:2|(null)|yesterday\n", time.UTC); err == nil || !strings.Contains(err.Error(), "submit time") {
		t.Errorf("a bad submit time: %v; want an error naming it", err)
	}
}
