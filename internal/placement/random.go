package placement

import "math/rand/v2"

// Random places each demand on a node drawn uniformly from those that can take it: the
// floor any policy must beat.
type Random struct {
	rng  *rand.Rand
	fits []int // scratch: the nodes that can take the demand
}

// NewRandom makes a Random policy whose draws are fixed by seed.
func NewRandom(seed uint64) *Random { return &Random{rng: newRand(seed)} }

func (*Random) Name() string { return "random" }

func (r *Random) Place(s *State, d *Demand) (Choice, bool) {
	r.fits = r.fits[:0]
	for n := range s.Nodes {
		if canTake(s, n, d) {
			r.fits = append(r.fits, n)
		}
	}
	if len(r.fits) == 0 {
		return Choice{}, false
	}
	return s.FirstDevices(r.fits[r.rng.IntN(len(r.fits))], d)
}

// canTake is FirstDevices without building the choice, for policies that look at every
// node and build only the one they pick.
func canTake(s *State, n int, d *Demand) bool {
	if !s.NodeAdmits(n, d) {
		return false
	}
	if d.GPUs == 0 {
		return true
	}
	for _, k := range [...]Kind{Shard, MIG, Whole} {
		if d.kinds()&k == 0 {
			continue
		}
		fit := 0
		for i := range s.Nodes[n].Devices {
			// Most devices fail on free units; DeviceFits settles the rest.
			if dv := &s.Nodes[n].Devices[i]; k != MIG && dv.Free() < max(d.Units, 1) {
				continue
			}
			if s.DeviceFits(n, i, d, k) {
				fit++
			}
		}
		if fit >= d.GPUs {
			return true
		}
	}
	return false
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// tieBreak picks uniformly among equally good candidates seen one at a time (reservoir
// sampling), as the Kubernetes scheduler does among nodes with the top score.
type tieBreak struct{ seen int }

// keep reports whether the candidate just seen replaces the one kept so far.
func (t *tieBreak) keep(rng *rand.Rand) bool {
	t.seen++
	return t.seen == 1 || rng.IntN(t.seen) == 0
}

// reset starts over when a strictly better candidate appears.
func (t *tieBreak) reset() { t.seen = 0 }
