package placement

// OursName is the name of gpumem's own placement policy.
const OursName = "gpumem"

// Ours places each demand where it lowers the expected fragmentation most, compared
// exactly rather than through FGD's integer score, and breaks what ties remain towards
// the node left with the least idle GPU, so that free GPU share is kept together.
type Ours struct {
	cache *fragCache
}

// NewOurs makes the policy for a target workload. It draws nothing at random: the same
// state and demand always give the same choice.
func NewOurs(shapes []Shape) *Ours { return &Ours{cache: newFragCache(shapes, exact)} }

func (*Ours) Name() string { return OursName }

func exact(delta float64) float64 { return delta }

func (o *Ours) Place(s *State, d *Demand) (Choice, bool) {
	best, bestN := trial{}, -1
	var bestIdle int64
	o.cache.each(s, d, func(n int, t trial) {
		idle := idleUnits(&s.Nodes[n])
		if bestN < 0 || t.delta > best.delta || (t.delta == best.delta && idle < bestIdle) {
			best, bestN, bestIdle = t, n, idle
		}
	})
	if bestN < 0 {
		return Choice{}, false
	}
	return o.cache.choice(s, bestN, d, best)
}

func idleUnits(nd *Node) int64 {
	var idle int64
	for i := range nd.Devices {
		idle += nd.Devices[i].Free()
	}
	return idle
}
