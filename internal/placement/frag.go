package placement

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Shape is one kind of task of a target workload, with how often it occurs. Fragmentation
// is only meaningful against the tasks expected next: free GPU share that no expected
// task can use is what a placement policy should avoid creating.
type Shape struct {
	CPU    int64
	Mem    int64 // host memory; 0 leaves memory out of fragmentation, as FGD does
	GPUs   int
	Units  int64    // per GPU
	Models []string // allowed GPU models; empty = any
	Freq   float64
}

// TargetShapes counts the shapes (CPU, GPU count, per-GPU units, models) of a workload
// and keeps the most frequent ones that together cover the given share of its tasks,
// their frequencies renormalised to sum to 1. Rare shapes are dropped because they would
// steer every decision towards tasks that hardly ever come.
func TargetShapes(ds []Demand, coverage float64) []Shape {
	type key struct {
		cpu, units int64
		gpus       int
		models     string
	}
	count := map[key]int{}
	for i := range ds {
		d := &ds[i]
		k := key{cpu: d.CPU, gpus: d.GPUs, models: strings.Join(d.Models, "|")}
		if d.GPUs > 0 {
			k.units = d.Units
		}
		count[k]++
	}
	keys := make([]key, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	// Most frequent first; the rest of the key only makes the order reproducible.
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(-cmp.Compare(count[a], count[b]), cmp.Compare(a.gpus, b.gpus),
			cmp.Compare(a.units, b.units), cmp.Compare(a.cpu, b.cpu), cmp.Compare(a.models, b.models))
	})
	var out []Shape
	covered, total := 0, len(ds)
	for _, k := range keys {
		if total == 0 || float64(covered) >= coverage*float64(total) {
			break
		}
		covered += count[k]
		var models []string
		if k.models != "" {
			models = strings.Split(k.models, "|")
		}
		out = append(out, Shape{CPU: k.cpu, GPUs: k.gpus, Units: k.units, Models: models, Freq: float64(count[k])})
	}
	for i := range out {
		out[i].Freq /= float64(covered)
	}
	return out
}

// WithMemory gives each shape the host memory its tasks most often ask for, so that
// fragmentation also counts GPUs stranded on nodes whose memory is spent: on the trace,
// most of the GPU demand that fails under FGD would have fitted but for host memory.
func WithMemory(shapes []Shape, ds []Demand) []Shape {
	out := slices.Clone(shapes)
	for i := range out {
		m := &out[i]
		seen := map[int64]int{}
		for j := range ds {
			d := &ds[j]
			if d.CPU == m.CPU && d.GPUs == m.GPUs && (d.GPUs == 0 || d.Units == m.Units) && slices.Equal(d.Models, m.Models) {
				seen[d.Mem]++
			}
		}
		for mem, n := range seen {
			if n > seen[m.Mem] || (n == seen[m.Mem] && mem < m.Mem) {
				m.Mem = mem
			}
		}
	}
	return out
}

// nodeView is what fragmentation depends on: CPU (and memory, when the shapes count it)
// left and each full GPU's model and free units, sorted, so that nodes in the same
// condition share one view and one computation.
type nodeView struct {
	cpu, mem int64
	gpus     []gpuView
}

type gpuView struct {
	model     string
	cap, free int64
}

func viewOf(nd *Node, withMem bool) nodeView {
	v := nodeView{cpu: nd.CPU - nd.UsedCPU}
	if withMem {
		v.mem = nd.Mem - nd.UsedMem
	}
	for i := range nd.Devices {
		dv := &nd.Devices[i]
		// MIG instances are not sliceable shares; fragmentation is about shared GPUs.
		if dv.Profile == "" {
			v.gpus = append(v.gpus, gpuView{dv.Model, dv.Capacity, dv.Free()})
		}
	}
	v.sort()
	return v
}

func (v *nodeView) sort() {
	slices.SortFunc(v.gpus, func(a, b gpuView) int {
		return cmp.Or(cmp.Compare(a.model, b.model), cmp.Compare(a.free, b.free), cmp.Compare(a.cap, b.cap))
	})
}

func (v *nodeView) key() string {
	var b []byte
	b = strconv.AppendInt(b, v.cpu, 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, v.mem, 10)
	for _, g := range v.gpus {
		b = append(b, ' ')
		b = append(b, g.model...)
		b = append(b, ':')
		b = strconv.AppendInt(b, g.cap, 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, g.free, 10)
	}
	return string(b)
}

func (v *nodeView) clone() nodeView {
	return nodeView{cpu: v.cpu, mem: v.mem, gpus: slices.Clone(v.gpus)}
}

// fragOf is the free units of a node that the shapes cannot use, weighted by how often
// each shape comes: all of it for a shape that cannot run there at all (or needs no
// GPU), only the GPUs too small for its share otherwise.
func fragOf(v *nodeView, shapes []Shape) float64 {
	var idle int64
	for _, g := range v.gpus {
		idle += g.free
	}
	total := 0.0
	for i := range shapes {
		m := &shapes[i]
		lost := idle
		if m.GPUs > 0 && v.cpu >= m.CPU && v.mem >= m.Mem {
			fit, small := 0, int64(0)
			for _, g := range v.gpus {
				switch {
				case len(m.Models) > 0 && !slices.Contains(m.Models, g.model):
				case g.free >= m.Units:
					fit++
				default:
					small += g.free
				}
			}
			if fit >= m.GPUs {
				lost = small
			}
			// Free share on GPUs of a model the shape may not use is lost to it too.
			if fit >= m.GPUs && len(m.Models) > 0 {
				for _, g := range v.gpus {
					if !slices.Contains(m.Models, g.model) {
						lost += g.free
					}
				}
			}
		}
		total += m.Freq * float64(lost)
	}
	return total
}

// ClusterFrag is the cluster's fragmentation against shapes and its idle units: the
// numerator and denominator of the fragmentation ratio.
func ClusterFrag(s *State, shapes []Shape) (frag float64, idle int64) {
	for n := range s.Nodes {
		v := viewOf(&s.Nodes[n], usesMem(shapes))
		frag += fragOf(&v, shapes)
		for _, g := range v.gpus {
			idle += g.free
		}
	}
	return frag, idle
}

func usesMem(shapes []Shape) bool {
	for i := range shapes {
		if shapes[i].Mem > 0 {
			return true
		}
	}
	return false
}
