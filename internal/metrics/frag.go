package metrics

// Fragmented is the part of avail bytes that no combination of the request sizes can
// use: avail minus the largest sum of sizes (each usable any number of times) that
// fits in it. With sizes 10, 20 and 40 GiB, a GPU with 35 GiB available has 5 GiB
// fragmented; with no sizes nothing counts as fragmented.
func Fragmented(avail uint64, sizes []uint64) uint64 {
	var g, smin, smax uint64
	for _, s := range sizes {
		if s == 0 {
			continue
		}
		g = gcd(g, s)
		if smin == 0 || s < smin {
			smin = s
		}
		smax = max(smax, s)
	}
	if g == 0 {
		return 0
	}
	// Work in multiples of the sizes' gcd. Past (smin/g)*(smax/g) every multiple is a
	// sum of sizes (it exceeds the Frobenius number), so the search stays small.
	n := avail / g
	if n >= (smin/g)*(smax/g) {
		return avail - n*g
	}
	reach := make([]bool, n+1)
	reach[0] = true
	best := uint64(0)
	for k := uint64(1); k <= n; k++ {
		for _, s := range sizes {
			if u := s / g; s != 0 && u <= k && reach[k-u] {
				reach[k], best = true, k
				break
			}
		}
	}
	return avail - best*g
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
