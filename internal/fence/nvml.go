package fence

import (
	"errors"
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpumem/gpumem/internal/inventory"
)

// The NVML functions the driver fence calls. An older libnvidia-ml lacks them, and
// go-nvml then fails inside the call rather than returning FUNCTION_NOT_FOUND, so
// Symbols asks the library first.
const (
	SymbolSet = "nvmlDeviceSetMemoryLimits_v1"
	SymbolGet = "nvmlDeviceGetMemoryLimits_v1"
)

// Device is the part of an NVML device handle the fence uses.
type Device interface {
	SetMemoryLimits_v1(namespace string, soft, hard uint64) nvml.Return
	GetMemoryLimits_v1(namespace string) (nvml.MemoryLimits_v1, nvml.Return)
}

// Lib is the part of NVML the fence uses: symbol lookup and device handles.
type Lib interface {
	Symbols() error
	Device(index int) (Device, error)
}

// NVML adapts an nvml.Interface (the real library, go-nvml's mock or the fake).
type NVML struct{ nvml.Interface }

// Symbols fails when the library lacks the per-cgroup limit functions.
func (l NVML) Symbols() error {
	ext := l.Extensions()
	for _, s := range []string{SymbolSet, SymbolGet} {
		if err := ext.LookupSymbol(s); err != nil {
			return fmt.Errorf("fence: %s: %w: %v", s, ErrUnsupported, err)
		}
	}
	return nil
}

// Device is the handle of GPU index.
func (l NVML) Device(index int) (Device, error) {
	d, ret := l.DeviceGetHandleByIndex(index)
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("fence: GPU %d: handle: %v", index, ret)
	}
	return d, nil
}

// ErrUnsupported marks an answer that says this node cannot fence at all (no symbol,
// NOT_SUPPORTED, FUNCTION_NOT_FOUND), as opposed to a call that failed here.
var ErrUnsupported = errors.New("per-cgroup GPU memory limits not supported here")

// retErr names what NVML answered, wrapping ErrUnsupported where the answer means the
// driver or kernel cannot do it.
func retErr(ret nvml.Return, what string) error {
	switch ret {
	case nvml.SUCCESS:
		return nil
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
		return fmt.Errorf("fence: %s: %w (%v)", what, ErrUnsupported, ret)
	case nvml.ERROR_OPERATING_SYSTEM:
		return fmt.Errorf("fence: %s: %v (the cgroup could not be opened, or the kernel has no dmem controller)", what, ret)
	case nvml.ERROR_NO_PERMISSION:
		return fmt.Errorf("fence: %s: %v (the limit is set by root only)", what, ret)
	case nvml.ERROR_INVALID_ARGUMENT:
		return fmt.Errorf("fence: %s: %v (a limit above the GPU's memory, or a path NVML refuses)", what, ret)
	}
	return fmt.Errorf("fence: %s: %v", what, ret)
}

// guard turns a panic inside an NVML call (a mock method left unset, a missing
// symbol) into an error: the prolog must answer, not crash.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("fence: NVML call failed: %w: %v", ErrUnsupported, r)
		}
	}()
	return f()
}

// Apply sets each limit on the job's cgroup dir (no soft limit, the slice as the hard
// limit) and reads it back: a limit NVML accepted but does not report is no fence. On
// the first failure it stops and clears what it set, so a job is never left with half
// its fence; the error says which GPU and what NVML answered.
func Apply(lib Lib, dir string, limits []Limit) error {
	if len(limits) == 0 {
		return nil
	}
	if err := guard(lib.Symbols); err != nil {
		return err
	}
	for k, l := range limits {
		err := guard(func() error { return setOne(lib, dir, l) })
		if err != nil {
			_ = Clear(lib, dir, limits[:k])
			return err
		}
	}
	return nil
}

func setOne(lib Lib, dir string, l Limit) error {
	d, err := lib.Device(l.GPU)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("GPU %d: set hard limit %d bytes on %s", l.GPU, l.Bytes, dir)
	if err := retErr(d.SetMemoryLimits_v1(dir, 0, l.Bytes), what); err != nil {
		return err
	}
	got, ret := d.GetMemoryLimits_v1(dir)
	if err := retErr(ret, fmt.Sprintf("GPU %d: read back the limit on %s", l.GPU, dir)); err != nil {
		return err
	}
	if got.HardLimit != l.Bytes {
		return fmt.Errorf("fence: GPU %d: NVML reports a hard limit of %d bytes on %s after setting %d", l.GPU, got.HardLimit, dir, l.Bytes)
	}
	return nil
}

// Clear lifts the limits on dir, as NVML documents it: soft 0, hard
// NVML_DEVICE_MEMORY_LIMIT_MAX. Removing the cgroup clears them too; the epilog clears
// first so that nothing outlives the job even where the cgroup does. Every GPU is
// tried; the error lists those that failed.
func Clear(lib Lib, dir string, limits []Limit) error {
	if len(limits) == 0 {
		return nil
	}
	if err := guard(lib.Symbols); err != nil {
		return err
	}
	var errs []string
	for _, l := range limits {
		err := guard(func() error {
			d, err := lib.Device(l.GPU)
			if err != nil {
				return err
			}
			ret := d.SetMemoryLimits_v1(dir, 0, nvml.DEVICE_MEMORY_LIMIT_MAX)
			return retErr(ret, fmt.Sprintf("GPU %d: clear the limit on %s", l.GPU, dir))
		})
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if errs != nil {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Probe is what the node answers about the driver fence, outside NVML.
type Probe struct {
	// Hook says Slurm runs gpumemd's prolog inside the job's cgroup before the job's
	// first task (slurm.conf Prolog and PrologFlags=RunInJob, or the SPANK plugin with
	// Contain); "" when it does, else why not.
	Hook string
	// V2 says a cgroup2 hierarchy is mounted where Slurm's cgroup/v2 uses it; "" when
	// it is, else why not.
	V2 string
	// Backend is the driver's accounting for the limit: BackendDmem where the kernel
	// offers the dmem controller (Linux 6.14+), BackendMisc (the driver's own) where not.
	Backend string
	// Dir is a cgroup v2 directory gpumemd made for the probe and owns: a limit is set
	// there, read back and cleared, GPU by GPU, as the real proof.
	Dir string
}

// The driver's two ways of holding a per-cgroup limit.
const (
	BackendDmem = "dmem"
	BackendMisc = "misc"
)

// probeBytes is the limit the probe sets on its own cgroup: small and exact.
const probeBytes = 1 << 20

// Detect is the fence each of gpus holds: hardware for a GPU in MIG mode; driver where
// the hook, a cgroup2 hierarchy, the NVML symbols and a real set, read-back and clear
// on a cgroup gpumemd owns all answer; none otherwise, with why, GPU by GPU (nil
// reasons for MIG and driver GPUs). It never returns FenceMPS: gpumemd does not set MPS
// limits itself. Kernel and driver versions are never consulted: only answers.
func Detect(lib Lib, gpus []inventory.GPU, p Probe) (fences []string, why []error) {
	fences, why = make([]string, len(gpus)), make([]error, len(gpus))
	common := func() error {
		switch {
		case p.Hook != "":
			return errors.New("fence: " + p.Hook)
		case p.V2 != "":
			return errors.New("fence: " + p.V2)
		case p.Dir == "":
			return errors.New("fence: no cgroup of gpumemd's own to probe the limit on")
		}
		return guard(lib.Symbols)
	}()
	for i, g := range gpus {
		switch {
		case g.MIG:
			fences[i] = inventory.FenceHardware
			continue
		case common != nil:
			fences[i], why[i] = inventory.FenceNone, common
			continue
		}
		err := guard(func() error { return probeOne(lib, g.Index, p.Dir) })
		if err != nil {
			fences[i], why[i] = inventory.FenceNone, err
			continue
		}
		fences[i] = inventory.FenceDriver
	}
	return fences, why
}

// probeOne sets a small limit on dir, reads it back and clears it.
func probeOne(lib Lib, gpu int, dir string) error {
	d, err := lib.Device(gpu)
	if err != nil {
		return err
	}
	if err := retErr(d.SetMemoryLimits_v1(dir, 0, probeBytes), fmt.Sprintf("GPU %d: probe: set a limit on %s", gpu, dir)); err != nil {
		return err
	}
	got, ret := d.GetMemoryLimits_v1(dir)
	clearErr := retErr(d.SetMemoryLimits_v1(dir, 0, nvml.DEVICE_MEMORY_LIMIT_MAX), fmt.Sprintf("GPU %d: probe: clear the limit on %s", gpu, dir))
	if err := retErr(ret, fmt.Sprintf("GPU %d: probe: read the limit back on %s", gpu, dir)); err != nil {
		return err
	}
	if got.HardLimit != probeBytes {
		return fmt.Errorf("fence: GPU %d: probe: NVML reports a hard limit of %d bytes on %s after setting %d", gpu, got.HardLimit, dir, probeBytes)
	}
	return clearErr
}
