package slurmcli

import (
	"reflect"
	"testing"
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
