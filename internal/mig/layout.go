package mig

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Placement is one GPU instance: a profile at a start slot.
type Placement struct {
	Profile string
	Start   int
}

// Layout is every GPU instance of one GPU.
type Layout []Placement

// String writes a layout as ParseLayout reads it: "3g.40gb@4,2g.20gb@0".
func (l Layout) String() string {
	parts := make([]string, len(l))
	for i, p := range l {
		parts[i] = p.Profile + "@" + strconv.Itoa(p.Start)
	}
	return strings.Join(parts, ",")
}

// ParseLayout reads "PROFILE@START,..."; an empty string is an empty layout.
func ParseLayout(s string) (Layout, error) {
	var l Layout
	if s == "" {
		return l, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, start, ok := strings.Cut(part, "@")
		n, err := strconv.Atoi(start)
		if !ok || name == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("mig: layout entry %q: want PROFILE@START, e.g. 3g.40gb@4", part)
		}
		l = append(l, Placement{Profile: name, Start: n})
	}
	return l, nil
}

// Validate checks l for one GPU of model m: known profiles at their valid starts, no two
// instances on one memory slot, at most Slices compute slices, and each profile at most
// its instance limit.
func (m Model) Validate(l Layout) error {
	var used [Slots]string
	slicesUsed := 0
	count := map[string]int{}
	for _, pl := range l {
		p, err := m.Profile(pl.Profile)
		if err != nil {
			return err
		}
		if !slices.Contains(p.Starts, pl.Start) {
			return fmt.Errorf("mig: %s: %s cannot start at slot %d; valid starts: %s", m.Key, p.Name, pl.Start, joinInts(p.Starts))
		}
		for s := pl.Start; s < pl.Start+p.Mem; s++ {
			if s >= Slots {
				return fmt.Errorf("mig: %s: %s@%d runs past slot %d", m.Key, p.Name, pl.Start, Slots-1)
			}
			if used[s] != "" {
				return fmt.Errorf("mig: %s: %s@%d overlaps %s on memory slot %d", m.Key, p.Name, pl.Start, used[s], s)
			}
			used[s] = p.Name + "@" + strconv.Itoa(pl.Start)
		}
		slicesUsed += p.Slices
		if count[p.Name]++; count[p.Name] > p.Max {
			return fmt.Errorf("mig: %s: more than %d instance(s) of %s", m.Key, p.Max, p.Name)
		}
	}
	if slicesUsed > Slices {
		return fmt.Errorf("mig: %s: layout %s uses %d compute slices; a GPU has %d", m.Key, l, slicesUsed, Slices)
	}
	return nil
}

// LayoutMiB validates l for m and adds up the real memory of its instances.
func (m Model) LayoutMiB(l Layout) (int64, error) {
	if err := m.Validate(l); err != nil {
		return 0, err
	}
	var mib int64
	for _, pl := range l {
		p, _ := m.Profile(pl.Profile) // Validate found it
		mib += p.MiB
	}
	return mib, nil
}

// Plan packs requests (MiB each) into as few GPUs of model m as it can: each request gets
// its Smallest profile, the biggest are placed first, each at the first GPU and start slot
// that keeps the layout valid. Layouts come back in the order the GPUs were opened.
func (m Model) Plan(requests []int64) ([]Layout, error) {
	profiles := make([]Profile, len(requests))
	for i, mib := range requests {
		p, err := m.Smallest(mib)
		if err != nil {
			return nil, err
		}
		profiles[i] = p
	}
	sort.SliceStable(profiles, func(i, j int) bool {
		if profiles[i].Mem != profiles[j].Mem {
			return profiles[i].Mem > profiles[j].Mem
		}
		return profiles[i].Slices > profiles[j].Slices
	})
	var gpus []Layout
	for _, p := range profiles {
		placed := false
		for g := range gpus {
			if l, ok := m.add(gpus[g], p); ok {
				gpus[g], placed = l, true
				break
			}
		}
		if !placed {
			l, _ := m.add(nil, p) // a single profile always fits an empty GPU
			gpus = append(gpus, l)
		}
	}
	return gpus, nil
}

// add places p on l at the first start that keeps l valid.
func (m Model) add(l Layout, p Profile) (Layout, bool) {
	for _, s := range p.Starts {
		next := append(l[:len(l):len(l)], Placement{Profile: p.Name, Start: s})
		if m.Validate(next) == nil {
			return next, true
		}
	}
	return l, false
}

func joinInts(list []int) string {
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ", ")
}
