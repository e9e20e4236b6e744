package mig

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Demand is how much was asked for one memory size: a request count from the queue, or
// a weight an admin gives a size seen in history.
type Demand struct {
	MiB    int64
	Weight float64
}

// Instance is one MIG instance as demand is matched against it.
type Instance struct {
	Profile string
	MiB     int64
}

// Served matches demand against instances, each instance serving at most one request
// (weights count requests, a fraction serving part of one): the largest requests first,
// each on the smallest free instance that holds it, so small requests never crowd out a
// big one that only a big instance can take. It returns the weight served and the
// weight asked, per requested size as well.
func Served(demand []Demand, instances []Instance) (served, total float64, bySize map[int64][2]float64) {
	free := make([]float64, len(instances)) // capacity left, 1 per instance
	order := make([]int, len(instances))
	for i := range instances {
		free[i], order[i] = 1, i
	}
	sort.SliceStable(order, func(a, b int) bool { return instances[order[a]].MiB < instances[order[b]].MiB })
	ds := append([]Demand(nil), demand...)
	sort.SliceStable(ds, func(a, b int) bool { return ds[a].MiB > ds[b].MiB })
	bySize = map[int64][2]float64{}
	for _, d := range ds {
		want := d.Weight
		got := 0.0
		for _, i := range order {
			if want <= 0 {
				break
			}
			if instances[i].MiB < d.MiB || free[i] <= 0 {
				continue
			}
			take := min(want, free[i])
			free[i] -= take
			want -= take
			got += take
		}
		s := bySize[d.MiB]
		bySize[d.MiB] = [2]float64{s[0] + got, s[1] + d.Weight}
		served += got
		total += d.Weight
	}
	return served, total, bySize
}

// Merge adds up demand per size, sizes ascending, dropping sizes with no weight.
func Merge(ds []Demand) []Demand {
	sum := map[int64]float64{}
	for _, d := range ds {
		sum[d.MiB] += d.Weight
	}
	out := make([]Demand, 0, len(sum))
	for mib, w := range sum {
		if w > 0 {
			out = append(out, Demand{MiB: mib, Weight: w})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].MiB < out[b].MiB })
	return out
}

// Scale multiplies every weight so they add up to total; history counts thousands of
// jobs where a plan has a few dozen instances, and only the mix matters.
func Scale(ds []Demand, total float64) []Demand {
	sum := 0.0
	for _, d := range ds {
		sum += d.Weight
	}
	out := make([]Demand, len(ds))
	for i, d := range ds {
		out[i] = d
		if sum > 0 {
			out[i].Weight = d.Weight * total / sum
		}
	}
	return out
}

// ParseDemand reads a demand file: one "SIZE [WEIGHT]" a line (SIZE like 20G or 10240M,
// WEIGHT a non-negative number, 1 when left out); '#' starts a comment. parseMiB reads
// a size the way the rest of gpumem does.
func ParseDemand(text string, parseMiB func(string) (int64, error)) ([]Demand, error) {
	var out []Demand
	for n, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) > 2 {
			return nil, fmt.Errorf("demand line %d: %q: want SIZE [WEIGHT], e.g. 20G 5", n+1, strings.TrimSpace(line))
		}
		mib, err := parseMiB(f[0])
		if err != nil || mib <= 0 {
			return nil, fmt.Errorf("demand line %d: size %q: want a positive size such as 20G or 10240M", n+1, f[0])
		}
		w := 1.0
		if len(f) == 2 {
			if w, err = strconv.ParseFloat(f[1], 64); err != nil || w < 0 || w != w || w > 1e12 {
				return nil, fmt.Errorf("demand line %d: weight %q: want a number from 0 to 1e12", n+1, f[1])
			}
		}
		out = append(out, Demand{MiB: mib, Weight: w})
	}
	return out, nil
}
