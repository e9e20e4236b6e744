package steer

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
)

// The pending jobs Slurm will start on its own are counted where it would start them,
// in queue order; pinned, typed and node-bound jobs are not, a job unpinned in this pass
// is; a job that fits nowhere claims nothing, and partitions hold.
func TestClaimQueue(t *testing.T) {
	inv := inventory.Cluster{Nodes: []inventory.Node{
		{Name: "a", Partitions: []string{"gpu"}, GPUs: []inventory.GPU{{Index: 0, Type: "l4", MemoryMiB: 24 << 10}, {Index: 1, Type: "l4", MemoryMiB: 24 << 10}}},
		{Name: "b", Partitions: []string{"gpu"}, GPUs: []inventory.GPU{{Index: 0, Type: "h100", MemoryMiB: 80 << 10}}},
		{Name: "c", Partitions: []string{"train"}, GPUs: []inventory.GPU{{Index: 0, Type: "l4", MemoryMiB: 24 << 10}}},
	}}
	cl := gibCluster(inv)
	if err := cl.Apply([]Use{{Node: "a", GPU: 0, Shards: 20}}); err != nil {
		t.Fatal(err)
	}
	pending := []Pending{
		{ID: "1", Partitions: []string{"gpu"}, Shards: 10},                                // a weighs least; its GPU 0 has 4 free: a 1
		{ID: "2", Partitions: []string{"gpu"}, Shards: 8, Type: "h100_g0", ReqNodes: "b"}, // pinned: counted by writeSnapshot
		{ID: "3", Partitions: []string{"gpu"}, Shards: 6, Type: "l4_g1", ReqNodes: "a"},   // unpinned now: a plain 6
		{ID: "4", Partitions: []string{"gpu"}, Shards: 90},                                // fits nowhere
		{ID: "5", Partitions: []string{"gpu"}, Shards: 3, Type: "l4"},                     // typed by model: left
		{ID: "6", Partitions: []string{"gpu"}, Shards: 3, ReqNodes: "a"},                  // its own node: left
		{ID: "7", Partitions: []string{"train"}, Shards: 24},                              // c, its partition's
		{ID: "8", Partitions: []string{"gpu"}, Shards: 24},                                // a is full for it now: b
	}
	weight := map[string]uint32{"a": 1, "b": 5, "c": 1}
	if n := cl.ClaimQueue(pending, map[string]bool{"3": true}, weight); n != 4 {
		t.Errorf("claimed %d; want 4 (jobs 1, 3, 7, 8)", n)
	}
	got := map[string][]int64{}
	for _, nd := range cl.State.Nodes {
		for _, dv := range nd.Devices {
			got[nd.Name] = append(got[nd.Name], dv.Used)
		}
	}
	// a: 20 running on GPU 0, jobs 1 and 3 on GPU 1; b: job 8; c: job 7.
	if want := map[string][]int64{"a": {20, 16}, "b": {24}, "c": {24}}; !reflect.DeepEqual(got, want) {
		t.Errorf("shards taken %v; want %v", got, want)
	}
}

// A queue of jobs that fit nowhere costs one scan of the nodes for their shape, and a
// job of another shape behind them is still claimed.
func TestClaimQueueSkipsAShapeThatFitsNowhere(t *testing.T) {
	inv := inventory.Cluster{Nodes: []inventory.Node{
		{Name: "a", GPUs: []inventory.GPU{{Index: 0, Type: "l4", MemoryMiB: 24 << 10}}},
	}}
	cl := gibCluster(inv)
	var pending []Pending
	for i := range 10000 {
		pending = append(pending, Pending{ID: strconv.Itoa(i), Shards: 90})
	}
	pending = append(pending, Pending{ID: "last", Shards: 10}, Pending{ID: "again", Shards: 10})
	if n := cl.ClaimQueue(pending, nil, nil); n != 2 {
		t.Errorf("claimed %d; want the two 10-shard jobs", n)
	}
	if used := cl.State.Nodes[0].Devices[0].Used; used != 20 {
		t.Errorf("%d shards taken; want 20", used)
	}
}
