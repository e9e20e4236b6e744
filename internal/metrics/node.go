package metrics

import "github.com/prometheus/client_golang/prometheus"

// nodeCollector reports how usable the node's free GPU memory is.
//
// Available memory of a shared (non-MIG) GPU is its total less what is allocated to
// jobs or in use, whichever is more: memory allocated but idle is not free to a new
// job, and memory in use beyond an allocation is not either. Fragmented memory is the
// available memory that none of the configured request sizes can fill (see
// Fragmented); MIG GPUs are left out because their instances, not their bytes, are
// what jobs get.
type nodeCollector struct {
	avail, frag, ratio *prometheus.Desc
}

func newNodeCollector() *nodeCollector {
	return &nodeCollector{
		avail: prometheus.NewDesc(namespace+"_node_available_memory_bytes",
			"GPU memory of shared GPUs neither allocated to jobs nor in use.", nil, nil),
		frag: prometheus.NewDesc(namespace+"_node_fragmented_memory_bytes",
			"Available GPU memory that no configured request size can use, summed over shared GPUs.", nil, nil),
		ratio: prometheus.NewDesc(namespace+"_node_fragmentation_ratio",
			"Fragmented over available GPU memory, 0-1; 0 when nothing is available.", nil, nil),
	}
}

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.avail
	ch <- c.frag
	ch <- c.ratio
}

func (c *nodeCollector) Collect(st *State, ch chan<- prometheus.Metric) error {
	if !st.Polled || st.SampleErr != nil {
		return errNoPoll
	}
	alloc := st.allocByGPU()
	var avail, frag uint64
	for _, g := range st.Snapshot.GPUs {
		if g.Err != nil || g.MIG {
			continue
		}
		taken := max(alloc[g.Index], g.Used)
		if taken >= g.Total {
			continue
		}
		a := g.Total - taken
		avail += a
		frag += Fragmented(a, st.FragSizes)
	}
	ratio := 0.0
	if avail > 0 {
		ratio = float64(frag) / float64(avail)
	}
	ch <- prometheus.MustNewConstMetric(c.avail, prometheus.GaugeValue, float64(avail))
	ch <- prometheus.MustNewConstMetric(c.frag, prometheus.GaugeValue, float64(frag))
	ch <- prometheus.MustNewConstMetric(c.ratio, prometheus.GaugeValue, ratio)
	return nil
}
