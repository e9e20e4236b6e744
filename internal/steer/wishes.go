package steer

import "slices"

// wishes is a set of "node a before node b" constraints kept free of cycles, and the
// ranking that honours them all.
type wishes struct {
	after  [][]int // after[a]: nodes that must come right after a
	before [][]int // before[b]: nodes that must come right before b
	in     []int   // how many nodes must come right before each
}

func newWishes(n int) *wishes {
	return &wishes{after: make([][]int, n), before: make([][]int, n), in: make([]int, n)}
}

// grant asks that first come before every other node of rivals, unless that
// contradicts an earlier grant (some rival must already come before first); it
// reports whether it was granted.
func (w *wishes) grant(first int, rivals []int) bool {
	ahead := w.ahead(first)
	for _, r := range rivals {
		if ahead[r] {
			return false
		}
	}
	for _, r := range rivals {
		if r != first && !slices.Contains(w.after[first], r) {
			w.after[first] = append(w.after[first], r)
			w.before[r] = append(w.before[r], first)
			w.in[r]++
		}
	}
	return true
}

// ahead marks the nodes that must already come before n: one walk back from n, so a
// grant costs one pass over the wishes, not one per rival.
func (w *wishes) ahead(n int) []bool {
	seen := make([]bool, len(w.after))
	stack := []int{n}
	for len(stack) > 0 {
		m := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range w.before[m] {
			if !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return seen
}

// order is a ranking of all nodes that honours every grant; among nodes free to come
// next, the one less reports first.
func (w *wishes) order(less func(a, b int) bool) []int {
	in := append([]int(nil), w.in...)
	var ready, out []int
	for n, k := range in {
		if k == 0 {
			ready = append(ready, n)
		}
	}
	for len(ready) > 0 {
		best := 0
		for i := range ready {
			if less(ready[i], ready[best]) {
				best = i
			}
		}
		n := ready[best]
		ready = append(ready[:best], ready[best+1:]...)
		out = append(out, n)
		for _, m := range w.after[n] {
			if in[m]--; in[m] == 0 {
				ready = append(ready, m)
			}
		}
	}
	return out
}
