package sim

import (
	"math"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
)

// TestAgainstReferenceSequence compares our FGD, decision by decision, with the published
// simulator's run on the full trace; on the sample (no published run) with FGD under
// another tie order, which must likewise rank every reference node among its best and
// land within a point of it.
func TestAgainstReferenceSequence(t *testing.T) {
	dir, full, nodes := testTrace(t)
	target := NewTarget(workload(t, dir, "default").Pods, 0.95)
	shapes := target.Shapes
	seq := sequence(t, dir, full, nodes, shapes)
	a, err := Compare(nodes, seq, "06-FGD", placement.NewFGD(shapes, 42), placement.NewFGD(shapes, 42), placement.NewFGD(shapes, 42).Scores)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FGD, random tie order: free run same node %d/%d (%.2f%%), alloc %.2f%% vs %.2f%%; forced: same node %d/%d (%.2f%%), reference node among best %d/%d (%.2f%%)",
		a.SameNode, a.Tasks, pct(a.SameNode, a.Tasks), a.Alloc, a.RefAlloc, a.ForcedSame, a.Forced, pct(a.ForcedSame, a.Forced), a.ForcedBest, a.Forced, pct(a.ForcedBest, a.Forced))
	// Our FGD must rank the reference's node among its best at every step it placed
	// something, and land within a point of its allocation; the rest is tie-breaking.
	if a.ForcedBest != a.Forced {
		t.Errorf("FGD's scores disagree with the reference on %d of %d steps", a.Forced-a.ForcedBest, a.Forced)
	}
	if math.Abs(a.Alloc-a.RefAlloc) > 1 {
		t.Errorf("FGD allocated %.2f%%, reference %.2f%%: more than a point apart", a.Alloc, a.RefAlloc)
	}
	g, err := Compare(nodes, seq, "06-FGD", placement.NewOurs(target.WithMemory), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gpumem on the same sequence: alloc %.2f%% (FGD reference %.2f%%, ours %.2f%%)", g.Alloc, a.RefAlloc, a.Alloc)
	b, err := Compare(nodes, seq, "05-BestFit", placement.BestFit{}, placement.BestFit{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("BestFit: free run same node %d/%d (%.2f%%), alloc %.2f%% vs %.2f%%; forced: same node %d/%d (%.2f%%)",
		b.SameNode, b.Tasks, pct(b.SameNode, b.Tasks), b.Alloc, b.RefAlloc, b.ForcedSame, b.Forced, pct(b.ForcedSame, b.Forced))
}

// The published FGD breaks its score ties in one fixed order of the nodes: given that
// order (recovered from its own decisions), our FGD must make its decisions, both with
// the state forced to follow the reference and running freely. On the sample the
// reference is FGD with a tie order of its own, which TieOrder must recover the same way.
func TestReferenceTiesFollowOneOrder(t *testing.T) {
	dir, full, nodes := testTrace(t)
	shapes := NewTarget(workload(t, dir, "default").Pods, 0.95).Shapes
	seq := sequence(t, dir, full, nodes, shapes)
	rank, conflicts, err := TieOrder(nodes, seq, "06-FGD", placement.NewFGD(shapes, 0).Scores)
	if err != nil {
		t.Fatal(err)
	}
	fgd := func() placement.Policy { return placement.NewFGD(shapes, 0).WithNodeOrder(rank) }
	a, err := Compare(nodes, seq, "06-FGD", fgd(), fgd(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reference ties against one order: %d of %d steps contradict; with that order: forced same node %d/%d (%.2f%%), free run same node %d/%d (%.2f%%), alloc %.2f%% vs %.2f%%",
		conflicts, a.Forced, a.ForcedSame, a.Forced, pct(a.ForcedSame, a.Forced), a.SameNode, a.Tasks, pct(a.SameNode, a.Tasks), a.Alloc, a.RefAlloc)
	if conflicts > a.Forced/1000 {
		t.Errorf("%d of %d reference steps contradict a single tie order: not a fixed order", conflicts, a.Forced)
	}
	if pct(a.ForcedSame, a.Forced) < 99 {
		t.Errorf("with the reference's own order, FGD agrees at %.2f%% of steps, want 99%% or more", pct(a.ForcedSame, a.Forced))
	}
	if math.Abs(a.Alloc-a.RefAlloc) > 0.1 {
		t.Errorf("with the reference's own order, FGD allocated %.2f%%, reference %.2f%%", a.Alloc, a.RefAlloc)
	}
}

func pct(a, b int) float64 { return 100 * float64(a) / float64(max(b, 1)) }
