package sim

import (
	"math"
	"slices"

	"github.com/gpumem/gpumem/internal/placement"
)

// AllocBound is a proven upper bound on the milli-GPU that any placement of any subset
// of ds can allocate on nodes (so 100% minus it over capacity is a lower bound on the
// unallocated share, for every policy, online or offline).
//
// Proof. Group the nodes into classes k of equal (CPU, memory, GPU count, GPU model),
// with class totals C_k, M_k, G_k. Demand i (CPU c_i, memory m_i, GPU g_i milli in all)
// is allowed in class k only if it fits one empty node of k (model allowed, c_i, m_i and
// its GPU count within one node): no placement can put it anywhere else. Any feasible
// placement gives x_ik in {0,1} with sum_k x_ik <= 1 and, per class, sum_i c_i x_ik <=
// C_k, sum_i m_i x_ik <= M_k, sum_i g_i x_ik <= G_k (a node's demands fit the node, so
// the class's fit the class). Its allocation sum g_i x_ik is therefore at most the
// optimum of the linear relaxation of that program (x_ik >= 0). For any multipliers
// a_k, b_k, e_k >= 0 the dual (weak duality) gives
//
//	LP <= sum_k (a_k C_k + b_k M_k + e_k G_k) + sum_i max(0, max_k allowed (g_i - a_k c_i - b_k m_i - e_k g_i))
//
// since each u_i := that inner max is dual feasible. Every evaluation of the right-hand
// side is a valid bound; we search the multipliers (projected subgradient) only to make
// it tight and keep the least value seen. a = b = 0, e = 1 gives the capacity (sum G_k);
// all zero gives the demand (sum g_i); both are evaluated, so the bound is never weaker
// than either.
func AllocBound(nodes []placement.Node, ds []placement.Demand, iters int) float64 {
	type class struct {
		cpu, mem, gpus int64
		model          string
		C, M, G        float64
	}
	var cls []class
	for _, n := range nodes {
		model := ""
		for _, d := range n.Devices {
			model = d.Model
		}
		var units int64
		for _, d := range n.Devices {
			units += d.Capacity
		}
		k := slices.IndexFunc(cls, func(c class) bool {
			return c.cpu == n.CPU && c.mem == n.Mem && c.gpus == int64(len(n.Devices)) && c.model == model
		})
		if k < 0 {
			cls = append(cls, class{cpu: n.CPU, mem: n.Mem, gpus: int64(len(n.Devices)), model: model})
			k = len(cls) - 1
		}
		cls[k].C += float64(n.CPU)
		cls[k].M += float64(n.Mem)
		cls[k].G += float64(units)
	}
	// Only demands with GPU carry value; the others only consume, so x = 0 for them.
	type item struct {
		c, m, g float64
		allowed []int
	}
	var items []item
	var demand float64
	for i := range ds {
		d := &ds[i]
		g := float64(d.GPUs) * float64(d.Units)
		if g == 0 {
			continue
		}
		it := item{c: float64(d.CPU), m: float64(d.Mem), g: g}
		for k, c := range cls {
			if d.CPU <= c.cpu && d.Mem <= c.mem && int64(d.GPUs) <= c.gpus && (len(d.Models) == 0 || slices.Contains(d.Models, c.model)) {
				it.allowed = append(it.allowed, k)
			}
		}
		if len(it.allowed) > 0 {
			items = append(items, it)
			demand += g
		}
	}
	// Multipliers in units of each class's GPU per share of its resource, so one step
	// size suits all three: a_k = alpha_k G_k / C_k, and so on.
	alpha, beta, eps := make([]float64, len(cls)), make([]float64, len(cls)), make([]float64, len(cls))
	usedC, usedM, usedG := make([]float64, len(cls)), make([]float64, len(cls)), make([]float64, len(cls))
	var capacity float64
	for k := range cls {
		eps[k] = 1
		capacity += cls[k].G
	}
	best := math.Min(demand, capacity)
	for it := 0; it < iters; it++ {
		clear(usedC)
		clear(usedM)
		clear(usedG)
		var v float64
		for k, c := range cls {
			v += c.G * (alpha[k] + beta[k] + eps[k])
		}
		for _, x := range items {
			top, at := 0.0, -1
			for _, k := range x.allowed {
				c := &cls[k]
				r := x.g - alpha[k]*ratio(c.G, c.C)*x.c - beta[k]*ratio(c.G, c.M)*x.m - eps[k]*x.g
				if r > top {
					top, at = r, k
				}
			}
			if at >= 0 {
				v += top
				usedC[at] += x.c
				usedM[at] += x.m
				usedG[at] += x.g
			}
		}
		best = math.Min(best, v)
		step := 0.5 / math.Sqrt(float64(it+1))
		for k, c := range cls {
			// The subgradient of the dual in alpha_k is G_k (1 - usedC_k / C_k), and so on.
			alpha[k] = math.Max(0, alpha[k]-step*(1-ratio(usedC[k], c.C)))
			beta[k] = math.Max(0, beta[k]-step*(1-ratio(usedM[k], c.M)))
			eps[k] = math.Max(0, eps[k]-step*(1-ratio(usedG[k], c.G)))
		}
	}
	return best
}

// ratio is x/y, or 0 for an empty class resource (its multiplier then stays idle, which
// is the dual point with that multiplier 0, still a valid bound).
func ratio(x, y float64) float64 {
	if y == 0 {
		return 0
	}
	return x / y
}
