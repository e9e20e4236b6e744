package nvmlsrc

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Profile is one MIG GPU instance profile a GPU supports.
type Profile struct {
	Enum int // go-nvml's GPU_INSTANCE_PROFILE_* index, what GetGpuInstanceProfileInfo takes
	Info nvml.GpuInstanceProfileInfo
	Name string // e.g. "3g.40gb", "1g.10gb+me"
}

// ProfileName names a profile the way nvidia-smi and mig-parted do. v1 profile info
// carries no name, so it is derived: slices, then memory rounded up to whole GiB
// (3g.40gb really has 40192 MiB), and "+me" for the media-extension 1-slice variant.
func ProfileName(enum int, info nvml.GpuInstanceProfileInfo) string {
	gib := (info.MemorySizeMB + 1023) / 1024
	name := fmt.Sprintf("%dg.%dgb", info.SliceCount, gib)
	if enum == nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1 {
		name += "+me"
	}
	return name
}

// Profiles lists the GPU instance profiles dev supports, in go-nvml's enum order.
func Profiles(dev nvml.Device) ([]Profile, error) {
	var out []Profile
	err := Guard(func() error {
		for enum := 0; enum < nvml.GPU_INSTANCE_PROFILE_COUNT; enum++ {
			info, ret := dev.GetGpuInstanceProfileInfo(enum)
			switch ret {
			case nvml.SUCCESS:
				out = append(out, Profile{Enum: enum, Info: info, Name: ProfileName(enum, info)})
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

// ProfileByID finds the profile whose NVML profile id (GpuInstanceInfo.ProfileId) is id.
func ProfileByID(ps []Profile, id uint32) (Profile, bool) {
	for _, p := range ps {
		if p.Info.Id == id {
			return p, true
		}
	}
	return Profile{}, false
}

// ProfileByName finds a profile by its derived name.
func ProfileByName(ps []Profile, name string) (Profile, bool) {
	for _, p := range ps {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
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
