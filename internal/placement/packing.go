package placement

import "math/rand/v2"

// GPUPacking fills partly used GPUs first, then nodes that already have GPUs in use,
// and opens an idle node last, keeping idle GPUs whole for the tasks that need them.
// Equally good nodes are drawn at random, as the Kubernetes scheduler does.
type GPUPacking struct{ rng *rand.Rand }

// NewGPUPacking makes a GPUPacking policy whose tie-breaks are fixed by seed.
func NewGPUPacking(seed uint64) *GPUPacking { return &GPUPacking{rng: newRand(seed)} }

func (*GPUPacking) Name() string { return "gpu-packing" }

func (p *GPUPacking) Place(s *State, d *Demand) (Choice, bool) {
	var pick tieBreak
	best, bestTier := -1, -1
	for n := range s.Nodes {
		if !canTake(s, n, d) {
			continue
		}
		tier, _ := packingTier(s, n, d)
		if tier < bestTier {
			continue
		}
		if tier > bestTier {
			bestTier = tier
			pick.reset()
		}
		if pick.keep(p.rng) {
			best = n
		}
	}
	if best < 0 {
		return Choice{}, false
	}
	c, ok := s.FirstDevices(best, d)
	if _, tight := packingTier(s, best, d); ok && c.Kind == Shard && tight >= 0 {
		c.Devices = []int{tight}
	}
	return c, ok
}

// packingTier ranks node n for d: 2 when a partly used GPU can take it (that GPU, the
// tightest, is returned), 1 when the node has GPUs in use, 0 for an idle node.
func packingTier(s *State, n int, d *Demand) (tier, tight int) {
	tight = -1
	nd := &s.Nodes[n]
	for i := range nd.Devices {
		dv := &nd.Devices[i]
		if dv.Used == 0 {
			continue
		}
		tier = 1
		if d.GPUs == 1 && d.kinds()&Shard != 0 && s.DeviceFits(n, i, d, Shard) && (tight < 0 || dv.Free() < nd.Devices[tight].Free()) {
			tight = i
		}
	}
	if tight >= 0 {
		tier = 2
	}
	return tier, tight
}
