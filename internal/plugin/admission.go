package plugin

import (
	"strings"

	"github.com/gpumem/gpumem/internal/admit"
)

// jobOf is the job as admission reads it: its GRES strings, partitions and shape.
func jobOf(f Fields) admit.Job {
	j := admit.Job{TresPerNode: f.PerNode, TresPerJob: f.PerJob, TresPerSocket: f.PerSocket, TresPerTask: f.PerTask,
		ReqNodes: f.ReqNodes, ExcNodes: f.ExcNodes, Features: f.Features, MinNodes: f.MinNodes,
		Array: f.ArrayInx, HetJob: f.HetJob}
	if f.Partition != "" {
		j.Partitions = strings.Split(f.Partition, ",")
	}
	return j
}

// usage is the view of what runs now that admission chooses by: the steering snapshot,
// when pinning reads one and it is fresh, plus the pins made since; nil otherwise, and
// then admission counts every device free.
func (p *Plugin) usage() *admit.Usage {
	pn := p.pins
	if pn == nil || pn.snap == nil || p.now().Sub(pn.snap.Taken) > pn.maxAge {
		return nil
	}
	u := &admit.Usage{Shards: map[string]map[int]int64{}}
	take := func(node string, gpu int, shards int64) {
		if u.Shards[node] == nil {
			u.Shards[node] = map[int]int64{}
		}
		u.Shards[node][gpu] += shards
	}
	for _, g := range pn.snap.GPUs {
		take(g.Node, g.GPU, g.Shards)
	}
	for _, pin := range pn.pins {
		if pin.at.After(pn.snap.Taken) {
			take(pin.node, pin.gpu, pin.shards)
		}
	}
	return u
}
