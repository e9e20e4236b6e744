package nvmlsrc

import (
	"errors"
	"fmt"

	"github.com/gpumem/gpumem/internal/mig"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrBusy means a GPU runs processes, so its MIG layout must not change.
var ErrBusy = errors.New("GPU busy")

type resolved struct {
	profile   GIProfile
	placement nvml.GpuInstancePlacement
}

// resolveLayout checks a layout against what the GPU itself offers (profiles, their
// possible placements, no two instances on one memory slot) before anything changes.
func resolveLayout(d nvml.Device, want mig.Layout) ([]resolved, error) {
	profiles, err := Profiles(d)
	if err != nil {
		return nil, err
	}
	var used uint32 // memory slots taken, one bit each
	out := make([]resolved, 0, len(want))
	for _, in := range want {
		p, ok := ProfileByName(profiles, in.Profile)
		if !ok {
			return nil, fmt.Errorf("MIG profile %q not offered by this GPU; offered: %s", in.Profile, profileNames(profiles))
		}
		pl, err := placementAt(d, p, in.Start)
		if err != nil {
			return nil, err
		}
		mask := uint32(1<<pl.Size-1) << pl.Start
		if used&mask != 0 {
			return nil, fmt.Errorf("MIG %s at slot %d overlaps another instance", in.Profile, in.Start)
		}
		used |= mask
		out = append(out, resolved{p, pl})
	}
	return out, nil
}

func createLayout(d nvml.Device, plan []resolved) error {
	for _, r := range plan {
		if _, err := CreateInstance(d, r.profile, r.placement); err != nil {
			return err
		}
	}
	return nil
}

// CheckMIG checks, changing nothing, that dev can take layout want now: MIG mode on, no
// process on the GPU, and every instance a profile and placement the GPU itself offers
// without overlap. A caller changing several GPUs checks them all before changing any.
func CheckMIG(dev nvml.Device, want mig.Layout) error {
	_, err := checkMIG(dev, want)
	return err
}

func checkMIG(dev nvml.Device, want mig.Layout) ([]resolved, error) {
	var plan []resolved
	err := Guard(func() error {
		cur, _, ret := dev.GetMigMode()
		if err := Err(ret, "MIG mode"); err != nil {
			return err
		}
		if cur != nvml.DEVICE_MIG_ENABLE {
			return fmt.Errorf("MIG mode is off: enable it first (nvidia-smi -i N -mig 1, then reset the GPU)")
		}
		procs, ret := dev.GetComputeRunningProcesses()
		if err := Err(ret, "running processes"); err != nil {
			return err
		}
		if len(procs) > 0 {
			pids := make([]uint32, len(procs))
			for i, p := range procs {
				pids[i] = p.Pid
			}
			return fmt.Errorf("%w: processes %v run on it; drain the node and wait for its jobs first", ErrBusy, pids)
		}
		var err error
		plan, err = resolveLayout(dev, want)
		return err
	})
	return plan, err
}

// DestroyMIG removes every instance of dev after checking (CheckMIG) that it can take
// want; CreateMIG then creates want. They are two calls so that a journal can record the
// moment in between, when the GPU holds no instance at all.
func DestroyMIG(dev nvml.Device, want mig.Layout) error {
	if _, err := checkMIG(dev, want); err != nil {
		return err
	}
	return Guard(func() error { return destroyAll(dev) })
}

// CreateMIG creates the instances of want on dev, which must hold none of them yet.
func CreateMIG(dev nvml.Device, want mig.Layout) error {
	plan, err := checkMIG(dev, want)
	if err != nil {
		return err
	}
	return Guard(func() error { return createLayout(dev, plan) })
}

// ApplyMIG replaces the MIG layout of dev with want: DestroyMIG, then CreateMIG.
// Changing MIG mode itself needs a GPU reset, so it is left to the administrator.
func ApplyMIG(dev nvml.Device, want mig.Layout) error {
	if err := DestroyMIG(dev, want); err != nil {
		return err
	}
	return CreateMIG(dev, want)
}

// destroyAll removes every compute and GPU instance of dev, compute instances first as
// NVML requires.
func destroyAll(dev nvml.Device) error {
	profiles, err := Profiles(dev)
	if err != nil {
		return err
	}
	for _, p := range profiles {
		gis, ret := dev.GetGpuInstances(&p.Info)
		if ret == nvml.ERROR_NOT_FOUND {
			continue
		}
		if err := Err(ret, "GPU instances of "+p.Name); err != nil {
			return err
		}
		for _, gi := range gis {
			if err := destroyCIs(gi); err != nil {
				return err
			}
			if err := Err(gi.Destroy(), "destroy GPU instance "+p.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

func destroyCIs(gi nvml.GpuInstance) error {
	cis, err := ComputeInstances(gi)
	if err != nil {
		return err
	}
	for _, ci := range cis {
		if err := Err(ci.Destroy(), "destroy compute instance"); err != nil {
			return err
		}
	}
	return nil
}

// ComputeInstances lists every compute instance of gi, of any profile.
func ComputeInstances(gi nvml.GpuInstance) ([]nvml.ComputeInstance, error) {
	var out []nvml.ComputeInstance
	for enum := 0; enum < nvml.COMPUTE_INSTANCE_PROFILE_COUNT; enum++ {
		info, ret := gi.GetComputeInstanceProfileInfo(enum, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret != nvml.SUCCESS {
			continue // a profile this GI does not offer
		}
		cis, ret := gi.GetComputeInstances(&info)
		if ret == nvml.ERROR_NOT_FOUND {
			continue
		}
		if err := Err(ret, "compute instances"); err != nil {
			return nil, err
		}
		out = append(out, cis...)
	}
	return out, nil
}

// placementAt finds p's placement starting at slot start.
func placementAt(d nvml.Device, p GIProfile, start int) (nvml.GpuInstancePlacement, error) {
	pls, ret := d.GetGpuInstancePossiblePlacements(&p.Info)
	if err := Err(ret, "possible placements of "+p.Name); err != nil {
		return nvml.GpuInstancePlacement{}, err
	}
	var starts []uint32
	for _, pl := range pls {
		if int(pl.Start) == start {
			return pl, nil
		}
		starts = append(starts, pl.Start)
	}
	return nvml.GpuInstancePlacement{}, fmt.Errorf("MIG %s cannot start at slot %d; it can start at %v", p.Name, start, starts)
}
