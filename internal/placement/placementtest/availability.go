// Package placementtest holds what tests ask of a placement state beyond the policies:
// whether a demand fits now, once running work drains, or never.
package placementtest

import "github.com/gpumem/gpumem/internal/placement"

// Fit is how a demand stands against a cluster's live state.
type Fit uint8

const (
	Never       Fit = iota // no node could take it even with nothing else running
	WhenDrained            // some node could, once enough running work ends
	Now                    // the policy places it now
)

func (f Fit) String() string {
	switch f {
	case Now:
		return "fits now"
	case WhenDrained:
		return "fits when drained"
	}
	return "never fits"
}

// Availability says whether policy p places d now, or d could fit an idle cluster, or not.
func Availability(s *placement.State, p placement.Policy, d *placement.Demand) Fit {
	if _, ok := p.Place(s, d); ok {
		return Now
	}
	for n := range s.Nodes {
		if fitsIdle(&s.Nodes[n], d) {
			return WhenDrained
		}
	}
	return Never
}

// fitsIdle reports whether node nd, with nothing allocated, takes d.
func fitsIdle(nd *placement.Node, d *placement.Demand) bool {
	idle := placement.Node{Name: nd.Name, Pools: nd.Pools, CPU: nd.CPU, Mem: nd.Mem, Devices: make([]placement.Device, len(nd.Devices))}
	for i, dv := range nd.Devices {
		dv.Used, dv.Whole = 0, false
		idle.Devices[i] = dv
	}
	s := placement.NewState([]placement.Node{idle})
	_, ok := s.FirstDevices(0, d)
	return ok
}
