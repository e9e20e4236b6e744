package placement

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIndexedFitMatchesSearch drives best fit and spread with their per-demand rankings
// (Indexed) and with the branch and bound alone side by side on one state through random
// clusters and job sequences, and requires the same choice or refusal at every step
// (another node only where the two leftovers are equal within scoreTie, which is the
// search's own tolerance). The sequences mix what the rankings must follow: commits of
// their own choices and of other policies' choices, releases, nodes edited and then
// reindexed, bursts of changes that outrun the change log, more demands than are kept,
// choices not taken, clones, and rankings prepared ahead.
func TestIndexedFitMatchesSearch(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	steps, ties := 0, 0
	for round := range rounds {
		rng := rand.New(rand.NewPCG(uint64(round), 17))
		nodes, models, pools := randomCluster(rng)
		demands := make([]Demand, 1+rng.IntN(12))
		if rng.IntN(10) == 0 {
			demands = make([]Demand, maxHeaps+10) // past the heaps kept
		}
		for i := range demands {
			demands[i] = mixedDemand(rng, models, pools)
		}
		s := NewState(nodes)
		fast := []Policy{Indexed(BestFit{}), Indexed(Spread{})}
		ref := []Policy{BestFit{}, Spread{}}
		if rng.IntN(3) == 0 {
			for _, p := range fast {
				p.(interface{ Prepare(*State, []Demand) }).Prepare(s, demands[:1+rng.IntN(len(demands))])
			}
		}
		type placed struct {
			c Choice
			d Demand
		}
		var live []placed
		for step := range 250 {
			switch r := rng.IntN(100); {
			case r < 12 && len(live) > 0: // a job ends
				i := rng.IntN(len(live))
				if err := s.Release(live[i].c, &live[i].d); err != nil {
					t.Fatal(err)
				}
				live = slices.Delete(live, i, i+1)
				continue
			case r < 16: // someone else places a job
				d := mixedDemand(rng, models, pools)
				if c, ok := (FirstFit{}).Place(s, &d); ok {
					if err := s.Commit(c, &d); err != nil {
						t.Fatal(err)
					}
					live = append(live, placed{c, d})
				}
				continue
			case r < 17: // an edit behind the policies' backs, then Reindex as State asks
				n := rng.IntN(len(s.Nodes))
				if dv := s.Nodes[n].Devices; len(dv) > 0 && !dv[0].Whole && dv[0].Used == 0 {
					dv[0].Capacity /= 2
				}
				s.Reindex()
				continue
			case r < 18: // a long burst: the change log drops what a ranking has not read
				for range 1500 {
					c, d := Choice{Node: rng.IntN(len(s.Nodes))}, Demand{CPU: 1}
					if s.Commit(c, &d) == nil {
						_ = s.Release(c, &d)
					}
				}
				continue
			case r < 19: // the caller moves on to a copy
				s = s.Clone()
				continue
			}
			d := demands[rng.IntN(len(demands))]
			k := rng.IntN(2)
			steps++
			cf, okf := fast[k].Place(s, &d)
			cr, okr := ref[k].Place(s, &d)
			switch {
			case okf != okr:
				t.Fatalf("round %d step %d, %s, demand %+v: indexed %+v %v, search %+v %v", round, step, ref[k].Name(), d, cf, okf, cr, okr)
			case !okf:
				continue
			case cf.Node != cr.Node:
				if lf, lr := s.Leftover(&cf, &d), s.Leftover(&cr, &d); lf > lr+scoreTie || lf < lr-scoreTie {
					t.Fatalf("round %d step %d, %s, demand %+v: indexed node %d leftover %v, search node %d leftover %v", round, step, ref[k].Name(), d, cf.Node, lf, cr.Node, lr)
				}
				ties++
			case cf.Kind != cr.Kind || !slices.Equal(cf.Devices, cr.Devices):
				t.Fatalf("round %d step %d, %s, demand %+v: indexed %+v, search %+v", round, step, ref[k].Name(), d, cf, cr)
			}
			if rng.IntN(10) == 0 {
				continue // chosen and not taken
			}
			if err := s.Commit(cf, &d); err != nil {
				t.Fatal(err)
			}
			live = append(live, placed{cf, d})
		}
	}
	t.Logf("%d rounds, %d calls, %d of them another node of equal leftover", rounds, steps, ties)
}
