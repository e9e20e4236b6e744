package placement

// scale is what best fit and spread divide leftovers by: the largest CPU count and the
// largest GPU capacity of any node of the cluster. Dividing by the cluster's largest
// node rather than each node's own size makes a leftover an amount, comparable across
// nodes: a small node that is half free does not look as roomy as a large one that is
// half free. On the Alibaba trace this is the FGD paper's best fit, 0.5*CPU/128 +
// 0.5*GPU/8. The scale depends only on what nodes have, so it changes only on Reindex.
type scale struct{ invCPU, invGPU float64 }

func scaleOf(nodes []Node) scale {
	var cpu, gpu int64
	for n := range nodes {
		var c int64
		for i := range nodes[n].Devices {
			c += nodes[n].Devices[i].Capacity
		}
		cpu, gpu = max(cpu, nodes[n].CPU), max(gpu, c)
	}
	var sc scale
	if cpu > 0 {
		sc.invCPU = 1 / float64(cpu)
	}
	if gpu > 0 {
		sc.invGPU = 1 / float64(gpu)
	}
	return sc
}

// leftover is the best-fit score: half the free CPU plus half the free GPU units, each
// as a share of the largest node's.
func (sc scale) leftover(freeCPU, free int64) float64 {
	return 0.5*float64(freeCPU)*sc.invCPU + 0.5*float64(free)*sc.invGPU
}
