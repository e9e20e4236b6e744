package nvmlsrc

import (
	"errors"
	"fmt"

	"github.com/gpumem/gpumem/internal/mig"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// GIProfile is a MIG profile as this GPU offers it: the catalog's terms (name, slices,
// real MiB, instance limit), as NVML reports them, plus the NVML handle that creates it.
type GIProfile struct {
	mig.Profile
	Enum int // go-nvml's GPU_INSTANCE_PROFILE_* index, what GetGpuInstanceProfileInfo takes
	Info nvml.GpuInstanceProfileInfo
}

func giProfile(enum int, info nvml.GpuInstanceProfileInfo) GIProfile {
	return GIProfile{
		Profile: mig.Profile{
			Name:   mig.ProfileName(int(info.SliceCount), int64(info.MemorySizeMB), enum == nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1),
			Slices: int(info.SliceCount), MiB: int64(info.MemorySizeMB), Max: int(info.InstanceCount), Source: mig.FromNVML,
		},
		Enum: enum, Info: info,
	}
}

// Profiles lists the GPU instance profiles dev supports, in go-nvml's enum order.
func Profiles(dev nvml.Device) ([]GIProfile, error) {
	var out []GIProfile
	err := Guard(func() error {
		for enum := 0; enum < nvml.GPU_INSTANCE_PROFILE_COUNT; enum++ {
			info, ret := dev.GetGpuInstanceProfileInfo(enum)
			switch ret {
			case nvml.SUCCESS:
				out = append(out, giProfile(enum, info))
			case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_INVALID_ARGUMENT:
				// this GPU has no such profile
			default:
				return Err(ret, fmt.Sprintf("GPU instance profile %d", enum))
			}
		}
		return nil
	})
	return out, err
}

// ProfileByName finds a profile by its derived name.
func ProfileByName(ps []GIProfile, name string) (GIProfile, bool) {
	for _, p := range ps {
		if p.Name == name {
			return p, true
		}
	}
	return GIProfile{}, false
}

// ErrNoFullCI means a GPU instance offers no compute instance spanning all its slices.
var ErrNoFullCI = errors.New("no compute instance profile spans the whole GPU instance")

// FullComputeProfile returns the compute instance profile that uses every slice of gi,
// the one-CI-per-GI layout Slurm and mig-parted's defaults expect.
func FullComputeProfile(gi nvml.GpuInstance, slices uint32) (nvml.ComputeInstanceProfileInfo, error) {
	var found nvml.ComputeInstanceProfileInfo
	err := Guard(func() error {
		for enum := 0; enum < nvml.COMPUTE_INSTANCE_PROFILE_COUNT; enum++ {
			info, ret := gi.GetComputeInstanceProfileInfo(enum, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
			if ret == nvml.SUCCESS && info.SliceCount == slices {
				found = info
				return nil
			}
		}
		return ErrNoFullCI
	})
	return found, err
}
