package steer

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpumem/gpumem/internal/inventory"
)

func TestSnapshotHoldsRunningAndPinnedShards(t *testing.T) {
	inv := inventory.Cluster{Nodes: []inventory.Node{
		{Name: "n1", GPUs: []inventory.GPU{{Index: 0, Type: "h100", MemoryMiB: 81920}, {Index: 1, Type: "h100", MemoryMiB: 81920}}},
		{Name: "n3", GPUs: []inventory.GPU{{Index: 0, Type: "l4", MIG: true, MemoryMiB: 24576}, {Index: 1, Type: "l4", MemoryMiB: 24576}}},
	}}
	cl := gibCluster(inv)
	if err := cl.Apply([]Use{{Node: "n1", GPU: 1, Shards: 30}, {Node: "n3", GPU: 0, Shards: 4}}); err != nil {
		t.Fatal(err)
	}
	if err := cl.TakeTyped("n3", "l4_g1", 10); err != nil {
		t.Fatal(err)
	}
	if err := cl.TakeTyped("n1", "h100_g0", 100); err != nil { // more than the GPU: capped
		t.Fatal(err)
	}
	for _, bad := range []struct{ node, typ, msg string }{
		{"n9", "h100_g0", "node n9 has no shareable GPU"},
		{"n3", "l4_g0", "no GPU whose shard type is l4_g0"}, // GPU 0 is in MIG mode
		{"n1", "h100_g7", "no GPU whose shard type is h100_g7"},
	} {
		if err := cl.TakeTyped(bad.node, bad.typ, 1); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("TakeTyped(%s, %s): %v; want %q", bad.node, bad.typ, err, bad.msg)
		}
	}
	taken := time.Date(2026, 11, 30, 17, 0, 0, 0, time.FixedZone("x", 3600))
	s := cl.Snapshot(taken, []int64{20, 5})
	b, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	// GPU 1 of n3 is shard index 0 there (GPU 0 is MIG): the snapshot names NVML indices.
	want := []GPUUse{{"n1", 0, 80}, {"n1", 1, 30}, {"n3", 1, 14}}
	if !reflect.DeepEqual(back.GPUs, want) || !back.Taken.Equal(taken) || !reflect.DeepEqual(back.Sizes, []int64{20, 5}) || back.Version != SnapshotVersion {
		t.Errorf("snapshot %s read back as %+v; want GPUs %+v taken %s", b, back, want, taken)
	}
	if s, err := DecodeSnapshot([]byte(`{"taken": "2026-11-30T17:00:00Z", "gpus": [{"node": "n1", "gpu": 0, "shards": 1}]}`)); err != nil || len(s.GPUs) != 1 {
		t.Errorf("a snapshot without a version (version 1): %+v, %v", s, err)
	}
	for in, msg := range map[string]string{
		`{"gpus": []}`: `no "taken" time`,
		`{"taken": "2026-11-30T17:00:00Z", "sizes": [0]}`:                                  "size 0",
		`{"taken": "2026-11-30T17:00:00Z", "gpus": [{"node": "", "gpu": 0, "shards": 1}]}`: "want a node",
		`[1, 2]`: "want the JSON gpumemctl steer --snapshot writes",
		`{"version": 2, "taken": "2026-11-30T17:00:00Z", "gpus": []}`:  "format version 2; this gpumem reads version 1",
		`{"version": -1, "taken": "2026-11-30T17:00:00Z", "gpus": []}`: "format version -1",
	} {
		if _, err := DecodeSnapshot([]byte(in)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("DecodeSnapshot(%s): %v; want %q", in, err, msg)
		}
	}
}

// gibCluster is the cluster of inv with one shard per GiB, as the tests count.
func gibCluster(inv inventory.Cluster) *Cluster {
	return NewCluster(inv, func(mib int64) int64 { return mib / 1024 })
}
