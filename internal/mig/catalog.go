// Package mig knows the MIG profiles of the GPUs gpumem plans for: their compute slices,
// memory slots, real memory and valid placements, and checks and plans layouts for one
// GPU. At run time NVML's own numbers win; this catalog serves planning and tests.
//
// It holds every MIG decision, without I/O: an inventory GPU's layout (LayoutOf),
// demand from the queue, history or a file, the cluster plan, the desired-layout files,
// a new layout's check against a node and desired against actual. Applying a layout is
// migapply's; the commands only gather inputs and print.
package mig

import (
	"fmt"
	"strings"
)

// Slots and Slices are the memory slots and compute slices of one MIG-capable GPU.
const (
	Slots  = 8
	Slices = 7
)

// Source says where a profile's MiB comes from.
type Source string

const (
	// Listed: published `nvidia-smi mig -lgip` output (GiB with two decimals, times 1024).
	Listed Source = "listed"
	// Derived: scaled from the H100 80GB listing by the profile's share of the GPU, rounded
	// down to 256 MiB, so planning never promises more than the GPU gives.
	Derived Source = "derived"
	// FromNVML: what the GPU itself reported.
	FromNVML Source = "nvml"
)

// ProfileName names a profile the way nvidia-smi and mig-parted do. NVML's v1 profile
// info carries no name, so it is derived: slices, then memory rounded up to whole GiB
// (3g.40gb really has 40192 MiB), and "+me" for the media-extension 1-slice variant.
func ProfileName(slices int, mib int64, mediaExt bool) string {
	name := fmt.Sprintf("%dg.%dgb", slices, (mib+1023)/1024)
	if mediaExt {
		name += "+me"
	}
	return name
}

// Profile is one GPU instance profile.
type Profile struct {
	Name   string // as nvidia-smi and Slurm's gres.conf Type name it, e.g. "3g.40gb"
	Slices int    // compute slices, of Slices
	Mem    int    // memory slots, of Slots
	MiB    int64  // memory NVML reports for an instance
	Source Source
	Max    int   // instances per GPU
	Starts []int // memory slots an instance may start at
}

// Model is a MIG-capable GPU model.
type Model struct {
	Key       string   // short name, such as h100-80gb
	Products  []string // NVML product names
	MemoryMiB int64    // NVML total memory
	Profiles  []Profile
}

// shape is a profile class common to every model; only names and sizes differ.
type shape struct {
	slices, mem, max int
	starts           []int
	suffix           string
}

func shapes() []shape {
	ones := []int{0, 1, 2, 3, 4, 5, 6}
	return []shape{
		{1, 1, 7, ones, ""}, {1, 1, 1, ones, "+me"}, {1, 2, 4, []int{0, 2, 4, 6}, ""},
		{2, 2, 3, []int{0, 2, 4}, ""}, {3, 4, 2, []int{0, 4}, ""}, {4, 4, 1, []int{0}, ""}, {7, 8, 1, []int{0}, ""},
	}
}

// model builds a catalog entry. gb names the memory of 1, 2, 4 and 8 slots as the profile
// names do; mib is their real size.
func model(key string, products []string, total int64, gb [4]int, mib [4]int64, src Source) Model {
	m := Model{Key: key, Products: products, MemoryMiB: total}
	class := map[int]int{1: 0, 2: 1, 4: 2, 8: 3}
	for _, s := range shapes() {
		c := class[s.mem]
		m.Profiles = append(m.Profiles, Profile{
			Name: fmt.Sprintf("%dg.%dgb%s", s.slices, gb[c], s.suffix), Slices: s.slices, Mem: s.mem,
			MiB: mib[c], Source: src, Max: s.max, Starts: s.starts,
		})
	}
	return m
}

// Catalog lists every model gpumem knows, built afresh so callers may change their copy.
func Catalog() []Model {
	return []Model{
		model("a100-40gb", []string{"NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"}, 40960,
			[4]int{5, 10, 20, 40}, [4]int64{4864, 9984, 20096, 40192}, Listed),
		model("a100-80gb", []string{"NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe"}, 81920,
			[4]int{10, 20, 40, 80}, [4]int64{9728, 19968, 40192, 80896}, Listed),
		model("h100-80gb", []string{"NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"}, 81559,
			[4]int{10, 20, 40, 80}, [4]int64{9984, 20096, 40448, 81152}, Listed),
		model("h100-94gb", []string{"NVIDIA H100 NVL"}, 95830,
			[4]int{12, 24, 47, 94}, [4]int64{11520, 23552, 47360, 95232}, Derived),
		model("h200-141gb", []string{"NVIDIA H200", "NVIDIA H200 NVL"}, 143771,
			[4]int{18, 35, 71, 141}, [4]int64{17408, 35328, 71168, 142848}, Derived),
	}
}

// Keys are the catalog's model keys, in its order.
func Keys() []string {
	var keys []string
	for _, m := range Catalog() {
		keys = append(keys, m.Key)
	}
	return keys
}

// Lookup finds a model by key (case-insensitive) or NVML product name. go-nvml's mock
// servers, behind gpumem's fake NVML, name a product "Mock " + its real name; that name
// is the product's.
func Lookup(name string) (Model, error) {
	product := strings.TrimPrefix(name, "Mock ")
	for _, m := range Catalog() {
		if strings.EqualFold(m.Key, name) {
			return m, nil
		}
		for _, p := range m.Products {
			if p == product {
				return m, nil
			}
		}
	}
	return Model{}, fmt.Errorf("mig: unknown GPU model %q; known: %s (or their NVML product names)", name, strings.Join(Keys(), ", "))
}

// Profile finds a profile of m by name.
func (m Model) Profile(name string) (Profile, error) {
	for _, p := range m.Profiles {
		if p.Name == name {
			return p, nil
		}
	}
	var names []string
	for _, p := range m.Profiles {
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("mig: %s has no profile %q; it has %s", m.Key, name, strings.Join(names, ", "))
}

// Smallest is the profile with the least real memory that holds mib (a request of 20 GiB
// needs 3g.40gb on an H100: 2g.20gb has 20096 MiB, less than 20480). Among equals it takes
// the fewest compute slices and the plain profile over its +me variant.
func (m Model) Smallest(mib int64) (Profile, error) {
	best := -1
	for i, p := range m.Profiles {
		if p.MiB < mib {
			continue
		}
		if best < 0 || less(p, m.Profiles[best]) {
			best = i
		}
	}
	if best < 0 {
		top := m.Profiles[len(m.Profiles)-1]
		return Profile{}, fmt.Errorf("mig: no MIG profile of %s holds %d MiB; the largest, %s, has %d MiB", m.Key, mib, top.Name, top.MiB)
	}
	return m.Profiles[best], nil
}

func less(a, b Profile) bool {
	if a.MiB != b.MiB {
		return a.MiB < b.MiB
	}
	if a.Slices != b.Slices {
		return a.Slices < b.Slices
	}
	return !strings.HasSuffix(a.Name, "+me") && strings.HasSuffix(b.Name, "+me")
}
