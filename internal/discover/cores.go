package discover

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// SysfsCoreMap maps logical CPUs (what NVML's affinity lists) to the core indices that
// gres.conf Cores= takes: cores numbered socket by socket, each socket's cores in
// core_id order, hyperthreads of one core folded together, as slurmd numbers them.
// root is normally /sys/devices/system/cpu.
func SysfsCoreMap(root string) (func([]int) ([]int, error), error) {
	dirs, err := filepath.Glob(filepath.Join(root, "cpu[0-9]*"))
	if err != nil || len(dirs) == 0 {
		return nil, fmt.Errorf("discover: no CPUs under %s", root)
	}
	type core struct{ pkg, id int }
	cpuCore := map[int]core{}
	for _, d := range dirs {
		cpu, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "cpu"))
		if err != nil {
			continue
		}
		pkg, err1 := readInt(filepath.Join(d, "topology", "physical_package_id"))
		id, err2 := readInt(filepath.Join(d, "topology", "core_id"))
		if err1 != nil || err2 != nil {
			continue // offline CPUs have no topology
		}
		cpuCore[cpu] = core{pkg, id}
	}
	var cores []core
	seen := map[core]bool{}
	for _, c := range cpuCore {
		if !seen[c] {
			seen[c] = true
			cores = append(cores, c)
		}
	}
	sort.Slice(cores, func(a, b int) bool {
		if cores[a].pkg != cores[b].pkg {
			return cores[a].pkg < cores[b].pkg
		}
		return cores[a].id < cores[b].id
	})
	index := map[core]int{}
	for i, c := range cores {
		index[c] = i
	}
	return func(cpus []int) ([]int, error) {
		set := map[int]bool{}
		for _, cpu := range cpus {
			c, ok := cpuCore[cpu]
			if !ok {
				continue // NVML's mask may name CPUs that are offline here
			}
			set[index[c]] = true
		}
		out := make([]int, 0, len(set))
		for i := range set {
			out = append(out, i)
		}
		sort.Ints(out)
		return out, nil
	}, nil
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
