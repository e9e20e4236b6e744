package usage

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

// Sample polls every GPU once. It fails only when NVML cannot say how many GPUs
// there are; a single GPU that stops answering is reported in its GPU.Err so the
// rest of the node keeps being measured.
func Sample(lib nvml.Interface, now time.Time) (Snapshot, error) {
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return Snapshot{}, fmt.Errorf("nvml: device count: %v", ret)
	}
	s := Snapshot{Time: now, GPUs: make([]GPU, 0, n)}
	for i := 0; i < n; i++ {
		s.GPUs = append(s.GPUs, sampleGPU(lib, i))
	}
	return s, nil
}

func sampleGPU(lib nvml.Interface, i int) GPU {
	g := GPU{Index: i, TempC: math.NaN(), PowerW: math.NaN(), UtilPct: math.NaN()}
	dev, ret := lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		g.Err = fmt.Errorf("nvml: GPU %d handle: %v", i, ret)
		return g
	}
	if uuid, ret := dev.GetUUID(); ret == nvml.SUCCESS {
		g.UUID = uuid
	}
	if name, ret := dev.GetName(); ret == nvml.SUCCESS {
		g.Name = name
	}
	mem, ret := dev.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		g.Err = fmt.Errorf("nvml: GPU %d memory: %v", i, ret)
		return g
	}
	g.Total, g.Used, g.Free = mem.Total, mem.Used, mem.Free
	optional(func() {
		if t, ret := dev.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
			g.TempC = float64(t)
		}
	})
	optional(func() {
		if mw, ret := dev.GetPowerUsage(); ret == nvml.SUCCESS {
			g.PowerW = float64(mw) / 1000
		}
	})
	optional(func() {
		if u, ret := dev.GetUtilizationRates(); ret == nvml.SUCCESS {
			g.UtilPct = float64(u.Gpu)
		}
	})
	optional(func() {
		if cur, _, ret := dev.GetMigMode(); ret == nvml.SUCCESS {
			g.MIG = cur == nvml.DEVICE_MIG_ENABLE
		}
	})
	if g.MIG {
		optional(func() { g.Instances = instances(dev) })
	}
	optional(func() {
		ps, ret := dev.GetComputeRunningProcesses()
		if ret != nvml.SUCCESS {
			return
		}
		for _, p := range ps {
			gi := int(p.GpuInstanceId)
			if p.GpuInstanceId == math.MaxUint32 || !g.MIG {
				gi = NoInstance
			}
			used, known := procSize(p.UsedGpuMemory, g.Total)
			g.Procs = append(g.Procs, Proc{PID: int(p.Pid), Used: used, GI: gi, Unknown: !known})
		}
	})
	return g
}

// instances lists the MIG GPU instances of a GPU in MIG mode, by placement, with the
// memory of their profile as NVML states it in MiB, which is less than the profile's
// name says and is what a MIG job really gets.
func instances(dev nvml.Device) []Instance {
	profiles, err := nvmlsrc.Profiles(dev)
	if err != nil {
		return nil
	}
	var out []Instance
	for _, p := range profiles {
		gis, ret := dev.GetGpuInstances(&p.Info)
		if ret != nvml.SUCCESS {
			continue
		}
		for _, gi := range gis {
			if info, ret := gi.GetInfo(); ret == nvml.SUCCESS {
				out = append(out, Instance{GI: int(info.Id), Profile: p.Name, Total: p.Info.MemorySizeMB << 20, Start: int(info.Placement.Start)})
			}
		}
	}
	// Slurm numbers a node's gpu records in gres.conf order, where gpumemd writes a
	// GPU's instances by placement (internal/discover).
	sort.SliceStable(out, func(a, b int) bool { return out[a].Start < out[b].Start })
	return out
}

// optional runs one telemetry read that a backend may not implement: a GPU that cannot
// report its temperature is still a GPU, so such a read counts as "not reported".
func optional(read func()) {
	_ = nvmlsrc.Guard(func() error { read(); return nil })
}
