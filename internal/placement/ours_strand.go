package placement

import "math"

// stranding is the tie-break that keeps a node's CPU able to feed its idle GPUs. A GPU
// on a node whose CPU is spent is lost as surely as one whose memory is spent, but the
// fragmentation score sees that only for the target's shapes one at a time, and its
// integer score rounds small losses away. Where CPU binds (every task asking 1.3 times
// the CPU), packing ties onto the nodes already open spends their CPU on CPU-heavy
// tasks and leaves their GPUs behind. So among equal scores, Ours prefers the node
// where the demand strands least GPU against the CPU the workload needs per GPU:
// stranded = idle milli-GPU beyond what the CPU left can feed at that rate.
type stranding struct {
	cpuPerMilli float64 // milli-CPU the target needs per milli-GPU; 0 turns the key off
	step        int64   // milli-GPU per step of the key, so near-equal strandings tie
}

// cpuPerMilli is the target's CPU per unit of GPU, CPU-only shapes included (they spend
// the CPU the GPUs need): sum of freq x CPU over sum of freq x milli-GPU.
func cpuPerMilli(shapes []Shape, toMilli float64) float64 {
	var cpu, gpu float64
	for _, sh := range shapes {
		cpu += sh.Freq * float64(sh.CPU)
		gpu += sh.Freq * float64(sh.GPUs) * math.Min(float64(sh.Units)*toMilli, 1000)
	}
	if gpu == 0 {
		return 0
	}
	return cpu / gpu
}

// strandedMilli is the idle milli-GPU that cpu milli-CPU cannot feed at rate r.
func strandedMilli(idle, cpu int64, r float64) int64 {
	return max(0, idle-int64(float64(cpu)/r))
}

// key is how much more GPU node nd strands once d is on it, in steps (0 when off).
func (k *stranding) key(nd *Node, d *Demand, toMilli float64) int64 {
	if k.cpuPerMilli <= 0 {
		return 0
	}
	idle, cpu := idleMilli(nd), nd.CPU-nd.UsedCPU
	var g int64
	if d.GPUs > 0 {
		g = int64(d.GPUs) * min(int64(float64(d.Units)*toMilli), 1000)
		if d.kinds()&Shard == 0 {
			g = int64(d.GPUs) * 1000
		}
	}
	before := strandedMilli(idle, cpu, k.cpuPerMilli)
	after := strandedMilli(max(0, idle-g), cpu-d.CPU, k.cpuPerMilli)
	return (after - before) / max(k.step, 1)
}
