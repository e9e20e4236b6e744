package sim

import (
	"path/filepath"
	"testing"

	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/trace"
)

func TestAgainstReferenceSequence(t *testing.T) {
	dir, nodes := sharedTrace(t)
	seq, err := trace.LoadSequence(filepath.Join(dir, trace.SequenceFile))
	if err != nil {
		t.Fatal(err)
	}
	shapes := Shapes(workload(t, dir, "default").Pods, 0.95)
	fgd := placement.NewFGD(shapes, 42)
	a, err := Compare(nodes, seq, "06-FGD", fgd, placement.NewFGD(shapes, 42).Scores)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FGD: same node %d/%d (%.2f%%), reference node among best %d/%d (%.2f%%), alloc %.2f%% vs %.2f%%",
		a.SameNode, a.Tasks, pct(a.SameNode, a.Tasks), a.ForcedBest, a.Forced, pct(a.ForcedBest, a.Forced), a.Alloc, a.RefAlloc)
	b, err := Compare(nodes, seq, "05-BestFit", placement.BestFit{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("BestFit: same node %d/%d (%.2f%%), alloc %.2f%% vs %.2f%%", b.SameNode, b.Tasks, pct(b.SameNode, b.Tasks), b.Alloc, b.RefAlloc)
}

func pct(a, b int) float64 { return 100 * float64(a) / float64(max(b, 1)) }
