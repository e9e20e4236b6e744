package admit

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpumem/gpumem/internal/inventory"
)

// TestIndexedUsageCountsAsNodeByNode: a usage view indexed for the Admitter, grown one
// pin at a time, takes from every option of every partition exactly what the same use
// read node by node takes, whatever the job's shape; so it decides every job alike.
func TestIndexedUsageCountsAsNodeByNode(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    inventory.Cluster
		def  []string
	}{{"lab", labCluster(), []string{"gpu"}}, {"test", testCluster(), nil}} {
		a, err := New(tc.c, tc.def, Options{PreferMIG: true})
		if err != nil {
			t.Fatal(err)
		}
		var nodes []string
		for _, n := range tc.c.Nodes {
			nodes = append(nodes, n.Name)
		}
		jobs := []Job{
			{TresPerNode: "gres:gpu:mem:5g"},
			{TresPerNode: "gres:gpu:mem:7g", ExcNodes: nodes[0]},
			{TresPerNode: "gres:gpu:mem:10g", MinNodes: 2},
			{TresPerNode: "gres:gpu:mem:20g,gres:gpu:2"},
			{TresPerNode: "gres:gpu:mem:20g", TresPerJob: "gres:gpu:3"},
			{TresPerNode: "gres:gpu:mem:30g", ReqNodes: nodes[len(nodes)-1]},
			{TresPerNode: "gres:gpu:mem:1g", Array: "0-49%20"},
		}
		rng := rand.New(rand.NewPCG(1, 2))
		ix := a.NewUsage()
		for step := range 300 {
			node := nodes[rng.IntN(len(nodes))]
			if rng.IntN(10) == 0 {
				node = "gone" // a node the inventory does not have
			}
			ix.Add(node, rng.IntN(9), int64(1+rng.IntN(40)))
			plain := &Usage{Shards: map[string]map[int]int64{}}
			for n, m := range ix.Shards {
				plain.Shards[n] = map[int]int64{}
				for g, s := range m {
					plain.Shards[n][g] = s
				}
			}
			for _, j := range jobs {
				d1, err1 := a.AdmitWith(j, ix)
				d2, err2 := a.AdmitWith(j, plain)
				if got, want := fmt.Sprint(d1, err1), fmt.Sprint(d2, err2); got != want {
					t.Fatalf("%s step %d %+v:\n indexed    %s\n node-by-node %s", tc.name, step, j, got, want)
				}
				compareLost(t, a, j, ix, plain)
			}
		}
	}
}

// compareLost checks lost itself, option by option, so that a difference the final
// choice happens to hide still fails.
func compareLost(t *testing.T, a *Admitter, j Job, ix, plain *Usage) {
	t.Helper()
	var q ask
	if found, err := readAsk(j, &q); err != nil || !found {
		t.Fatalf("%+v: %v", j, err)
	}
	sh, err := a.shapeOf(&j)
	if err != nil {
		return // refused for its shape: no option is counted
	}
	for _, p := range a.ix.parts {
		for _, o := range a.options(&q, []*partition{p}, nil) {
			if l1, l2 := a.lost(&q, &sh, p, &o, ix), a.lostByNode(&q, &sh, p, &o, plain); l1 != l2 {
				t.Fatalf("%+v in %s, option %+v: indexed lost %d, node by node %d", j, p.name, o, l1, l2)
			}
		}
	}
}
