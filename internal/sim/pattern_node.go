package sim

import (
	"slices"

	"github.com/gpumem/gpumem/internal/placement"
)

// The pricing step of PatternBound: the most one node of a class can be worth under
// given item values, over a relaxation of what the node can hold (see PatternBound's
// proof), and the content that reaches it, for the subgradient.

// devKind is one kind of device within a node class, with how many the node has.
type devKind struct {
	model, profile string
	capacity       int64
	shareable      bool
	count          int
}

// patClass is a class of identical nodes: same CPU, memory and devices.
type patClass struct {
	cpu, mem int64
	devs     []devKind
	ndev     int
	units    float64 // the node's device capacity in all (the allocation a node can hold)
	n        int     // nodes in the class
	items    []int   // item types that fit an empty node of the class
}

// patItem is one type of demand with GPU: its shape and how many arrived.
type patItem struct {
	cpu, mem, units int64
	gpus            int
	kinds           placement.Kind
	models          []string
	g               float64 // milli-GPU it allocates when placed (gpus x units)
	n               float64 // arrivals of this type
}

func (it *patItem) modelOK(dk *devKind) bool {
	if len(it.models) == 0 {
		return true
	}
	for _, m := range it.models {
		if m == dk.model {
			return true
		}
	}
	return false
}

// shardOK: one GPU's piece of it can be a shard of a device of kind dk (DeviceFits).
func (it *patItem) shardOK(dk *devKind) bool {
	return it.kinds&placement.Shard != 0 && dk.shareable && dk.profile == "" && it.units <= dk.capacity && it.modelOK(dk)
}

// wholeOK: one GPU's piece of it can take a device of kind dk whole, as a full GPU or a
// MIG instance (DeviceFits).
func (it *patItem) wholeOK(dk *devKind) bool {
	if it.units > dk.capacity || !it.modelOK(dk) {
		return false
	}
	return (it.kinds&placement.Whole != 0 && dk.profile == "") || (it.kinds&placement.MIG != 0 && dk.profile != "")
}

// fits: the item fits an empty node of the class, each of its GPUs on a device of its own.
func (c *patClass) fits(it *patItem) bool {
	if it.cpu > c.cpu || it.mem > c.mem {
		return false
	}
	devices := 0
	for i := range c.devs {
		if it.shardOK(&c.devs[i]) || it.wholeOK(&c.devs[i]) {
			devices += c.devs[i].count
		}
	}
	return devices >= it.gpus
}

// knapCells caps the exact knapsack over a device's units; past it (units finer than
// the trace's milli-GPU) the knapsack's linear relaxation stands in, still an upper bound.
const knapCells = 4096

// nodeValue is the most a node of class c can be worth when item t is worth w[t], over
// the relaxed node of PatternBound's proof: multi-GPU tasks taken whole take their
// devices, every other device holds the best single-device content (deviceValue); CPU,
// memory and supply are not checked here (their multipliers are in w). It adds the
// content reaching that value, times scale, to x (a shard piece of a multi-GPU task
// counts 1/gpus of it).
func nodeValue(c *patClass, items []patItem, w []float64, x []float64, scale float64) float64 {
	// The best content of one device, over the class's device kinds.
	best, bestDK := 0.0, -1
	var bestPieces []piece
	for i := range c.devs {
		dk := &c.devs[i]
		v, pieces := deviceValue(dk, c.items, items, w)
		if v > best {
			best, bestDK, bestPieces = v, i, pieces
		}
	}
	// Multi-GPU items taken whole: the best of each GPU count.
	multi := make([]int, c.ndev+1)
	for g := range multi {
		multi[g] = -1
	}
	for _, t := range c.items {
		it := &items[t]
		if it.gpus < 2 || w[t] <= 0 {
			continue
		}
		whole := 0
		for i := range c.devs {
			if it.wholeOK(&c.devs[i]) {
				whole += c.devs[i].count
			}
		}
		if whole >= it.gpus && (multi[it.gpus] < 0 || w[t] > w[multi[it.gpus]]) {
			multi[it.gpus] = t
		}
	}
	// f[s]: the most s devices can hold; from[s]: the item that ends it, -1 for one
	// device of the best content (or nothing).
	f := make([]float64, c.ndev+1)
	from := make([]int, c.ndev+1)
	for s := 1; s <= c.ndev; s++ {
		f[s], from[s] = f[s-1]+best, -1
		for g := 2; g <= s; g++ {
			if t := multi[g]; t >= 0 && f[s-g]+w[t] > f[s] {
				f[s], from[s] = f[s-g]+w[t], t
			}
		}
	}
	for s := c.ndev; s > 0; {
		if t := from[s]; t >= 0 {
			x[t] += scale
			s -= items[t].gpus
			continue
		}
		if bestDK >= 0 {
			for _, p := range bestPieces {
				x[p.item] += scale * p.count / float64(items[p.item].gpus)
			}
		}
		s--
	}
	return f[c.ndev]
}

// sized is the best item of one shard size.
type sized struct {
	units int64
	item  int
}

// piece is count GPU pieces of one item type on a device.
type piece struct {
	item  int
	count float64
}

// deviceValue is the most one device of kind dk can hold: one single-GPU task taken
// whole, or shard pieces up to its capacity (an unbounded knapsack: supply is priced
// in w).
func deviceValue(dk *devKind, allowed []int, items []patItem, w []float64) (float64, []piece) {
	best := 0.0
	var content []piece
	// The best shard piece of each size, in the order first seen (deterministic ties);
	// the knapsack needs no other.
	var bySize []sized
	for _, t := range allowed {
		it := &items[t]
		v := w[t] / float64(it.gpus)
		if v <= 0 {
			continue
		}
		// A multi-GPU task taken whole is nodeValue's; here only single-GPU ones.
		if it.gpus == 1 && it.wholeOK(dk) && v > best {
			best, content = v, []piece{{t, 1}}
		}
		if it.shardOK(dk) {
			j := slices.IndexFunc(bySize, func(s sized) bool { return s.units == it.units })
			if j < 0 {
				bySize = append(bySize, sized{it.units, t})
			} else if b := bySize[j].item; v > w[b]/float64(items[b].gpus) {
				bySize[j].item = t
			}
		}
	}
	if len(bySize) == 0 {
		return best, content
	}
	step := dk.capacity
	for _, s := range bySize {
		step = gcd(step, s.units)
	}
	cells := int(dk.capacity / step)
	if cells > knapCells {
		// Linear relaxation: the device filled with the best value per unit.
		ratio, at := 0.0, -1
		for _, s := range bySize {
			t := s.item
			if r := w[t] / float64(items[t].gpus) / float64(s.units); r > ratio {
				ratio, at = r, t
			}
		}
		if v := ratio * float64(dk.capacity); v > best {
			best, content = v, []piece{{at, float64(dk.capacity) / float64(items[at].units)}}
		}
		return best, content
	}
	val := make([]float64, cells+1)
	from := make([]int, cells+1) // item that ends the best fill of c cells, -1: one cell idle
	for c := 1; c <= cells; c++ {
		val[c], from[c] = val[c-1], -1
		for _, s := range bySize {
			k := int(s.units / step)
			if k > c {
				continue
			}
			if v := val[c-k] + w[s.item]/float64(items[s.item].gpus); v > val[c] {
				val[c], from[c] = v, s.item
			}
		}
	}
	if val[cells] <= best {
		return best, content
	}
	content = content[:0]
	for c := cells; c > 0; {
		t := from[c]
		if t < 0 {
			c--
			continue
		}
		content = append(content, piece{t, 1})
		c -= int(items[t].units / step)
	}
	return val[cells], content
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
