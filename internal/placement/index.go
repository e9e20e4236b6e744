package placement

// mayFit is a cheap necessary condition for d on node n, so policies skip most full
// nodes without looking at their devices.
func (s *State) mayFit(n int, d *Demand) bool {
	nd := &s.Nodes[n]
	return nd.CPU-nd.UsedCPU >= d.CPU && nd.Mem-nd.UsedMem >= d.Mem && len(nd.Devices) >= d.GPUs
}
