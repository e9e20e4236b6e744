// Package discover turns what NVML reports about a node into an inventory.Node: the one
// model gres.conf, slurm.conf and the job_submit plugin are all generated from.
package discover

import (
	"fmt"
	"sort"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

// Options shape a discovery.
type Options struct {
	NodeName string
	// TypeStyle is TypeShort (default) or TypeSlurm; see GPUType.
	TypeStyle string
	// CoreMap turns NVML's logical CPU ids into Slurm's core ids for gres.conf Cores=.
	// nil keeps the ids as they are (right for mocks and fakes, which describe cores).
	CoreMap func(cpus []int) ([]int, error)
	// MaxCPUs bounds the affinity bitmask asked of NVML; 0 means 4096.
	MaxCPUs int
}

// Node discovers the GPUs of one node.
func Node(src *nvmlsrc.Source, opt Options) (inventory.Node, error) {
	if opt.NodeName == "" {
		return inventory.Node{}, fmt.Errorf("discover: no node name: pass the Slurm NodeName (e.g. --node gpu01)")
	}
	gs, err := GPUs(src, opt)
	if err != nil {
		return inventory.Node{}, err
	}
	return inventory.Node{Name: opt.NodeName, GPUs: gs}, nil
}

// GPUs discovers every GPU NVML reports, in NVML index order.
func GPUs(src *nvmlsrc.Source, opt Options) ([]inventory.GPU, error) {
	var out []inventory.GPU
	err := nvmlsrc.Guard(func() error {
		count, ret := src.NVML.DeviceGetCount()
		if err := nvmlsrc.Err(ret, "device count"); err != nil {
			return err
		}
		for i := 0; i < count; i++ {
			g, err := gpu(src, i, opt)
			if err != nil {
				return fmt.Errorf("discover: GPU %d: %w", i, err)
			}
			out = append(out, g)
		}
		return nil
	})
	return out, err
}

func gpu(src *nvmlsrc.Source, i int, opt Options) (inventory.GPU, error) {
	dev, ret := src.NVML.DeviceGetHandleByIndex(i)
	if err := nvmlsrc.Err(ret, "handle"); err != nil {
		return inventory.GPU{}, err
	}
	g := inventory.GPU{Index: i}
	if g.Minor, ret = dev.GetMinorNumber(); ret != nvml.SUCCESS {
		return g, nvmlsrc.Err(ret, "minor number")
	}
	if g.Name, ret = dev.GetName(); ret != nvml.SUCCESS {
		return g, nvmlsrc.Err(ret, "name")
	}
	g.Type = GPUType(g.Name, opt.TypeStyle)
	if g.UUID, ret = dev.GetUUID(); ret != nvml.SUCCESS {
		return g, nvmlsrc.Err(ret, "UUID")
	}
	mem, ret := dev.GetMemoryInfo()
	if err := nvmlsrc.Err(ret, "memory"); err != nil {
		return g, err
	}
	g.MemoryMiB = int64(mem.Total >> 20)
	cores, err := affinity(dev, opt)
	if err != nil {
		return g, err
	}
	g.Cores = cores
	cur, pending, ret := dev.GetMigMode()
	switch ret {
	case nvml.SUCCESS:
		g.MIG, g.MIGPending = cur == nvml.DEVICE_MIG_ENABLE, pending == nvml.DEVICE_MIG_ENABLE
	case nvml.ERROR_NOT_SUPPORTED:
		// a GPU without MIG
	default:
		return g, nvmlsrc.Err(ret, "MIG mode")
	}
	if g.MIG {
		if g.Instances, err = instances(src, dev, g.Minor); err != nil {
			return g, err
		}
	}
	return g, nil
}

func affinity(dev nvml.Device, opt Options) (string, error) {
	maxCPUs := opt.MaxCPUs
	if maxCPUs <= 0 {
		maxCPUs = 4096
	}
	mask, ret := dev.GetCpuAffinity(maxCPUs) // go-nvml sizes the bitmask from a CPU count
	if ret == nvml.ERROR_NOT_SUPPORTED {
		return "", nil // no Cores=: Slurm then lets any core use the GPU
	}
	if err := nvmlsrc.Err(ret, "CPU affinity"); err != nil {
		return "", err
	}
	cpus := nvmlsrc.MaskCPUs(mask)
	if opt.CoreMap != nil && len(cpus) > 0 {
		var err error
		if cpus, err = opt.CoreMap(cpus); err != nil {
			return "", err
		}
	}
	return nvmlsrc.FormatCPUList(cpus), nil
}

// instances lists the MIG GPU instances of dev, by placement. Each GI is reported with
// its first compute instance: the one-CI-per-GI layout that Slurm schedules.
func instances(src *nvmlsrc.Source, dev nvml.Device, minor int) ([]inventory.MIGInstance, error) {
	profiles, err := nvmlsrc.Profiles(dev)
	if err != nil {
		return nil, err
	}
	var out []inventory.MIGInstance
	for _, p := range profiles {
		gis, ret := dev.GetGpuInstances(&p.Info)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_NOT_SUPPORTED {
			continue
		}
		if err := nvmlsrc.Err(ret, "GPU instances of "+p.Name); err != nil {
			return nil, err
		}
		for _, gi := range gis {
			in, ok, err := instance(src, gi, p, minor)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, in)
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Start < out[b].Start })
	return out, nil
}

func instance(src *nvmlsrc.Source, gi nvml.GpuInstance, p nvmlsrc.GIProfile, minor int) (inventory.MIGInstance, bool, error) {
	info, ret := gi.GetInfo()
	if err := nvmlsrc.Err(ret, "GPU instance info"); err != nil {
		return inventory.MIGInstance{}, false, err
	}
	ci, ok, err := firstCI(gi)
	if err != nil || !ok {
		// A GI without a compute instance runs nothing, and Slurm cannot hand it out.
		return inventory.MIGInstance{}, false, err
	}
	in := inventory.MIGInstance{
		Profile:   p.Name,
		MemoryMiB: int64(p.Info.MemorySizeMB),
		GI:        int(info.Id),
		CI:        ci,
		Start:     int(info.Placement.Start),
		Slices:    int(p.Info.SliceCount),
	}
	giMinor, ciMinor, err := src.CapsMinors(minor, in.GI, in.CI)
	if err != nil {
		return in, false, err
	}
	in.Files = []string{
		fmt.Sprintf("/dev/nvidia%d", minor),
		fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", giMinor),
		fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", ciMinor),
	}
	return in, true, nil
}

func firstCI(gi nvml.GpuInstance) (int, bool, error) {
	cis, err := nvmlsrc.ComputeInstances(gi)
	if err != nil {
		return 0, false, err
	}
	best, found := 0, false
	for _, ci := range cis {
		info, ret := ci.GetInfo()
		if err := nvmlsrc.Err(ret, "compute instance info"); err != nil {
			return 0, false, err
		}
		if !found || int(info.Id) < best {
			best, found = int(info.Id), true
		}
	}
	return best, found, nil
}

// OptionsFor is the usual discovery of node through src: on a real node, CPU affinity
// is mapped to Slurm's core numbers through sysfs; mocks and fakes already describe
// cores.
func OptionsFor(src *nvmlsrc.Source, node string) Options {
	opt := Options{NodeName: node}
	if src.Kind == nvmlsrc.KindReal {
		if m, err := SysfsCoreMap("/sys/devices/system/cpu"); err == nil {
			opt.CoreMap = m
		}
	}
	return opt
}
