// Package nvmlsrc selects where GPU facts come from: the node's real NVML library, one of
// go-nvml's mock DGX servers, or a fake node described by a small JSON file. gpumemd and
// gpumemctl select it the same way (--nvml=real|mock:NAME|fake:PATH), so a lab or a test
// exercises exactly the code that runs against a real GPU.
package nvmlsrc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Kinds of backend, as written before the colon of a spec.
const (
	KindReal = "real"
	KindMock = "mock"
	KindFake = "fake"
)

// Source is an initialised NVML backend.
type Source struct {
	NVML nvml.Interface
	Kind string // KindReal, KindMock or KindFake
	Spec string // as given, for messages

	// CapsMinors maps a MIG instance to the minor numbers of its /dev/nvidia-caps
	// files (GPU instance access, compute instance access). The real driver publishes
	// them in /proc; mocks and fakes follow the driver's fixed numbering.
	CapsMinors func(gpuMinor, gi, ci int) (giMinor, ciMinor int, err error)

	// Fake is the fake node's state; nil for other kinds. Tests and the lab use it to
	// change processes, utilisation or XIDs while the source is open.
	Fake *FakeNode

	shutdown func() nvml.Return
}

// Close shuts NVML down. It is safe to call more than once.
func (s *Source) Close() {
	if s == nil || s.shutdown == nil {
		return
	}
	f := s.shutdown
	s.shutdown = nil
	_ = Guard(func() error { f(); return nil })
}

// CheckSpec reports a spec that names no backend Open knows (a configuration error, as
// opposed to a backend that fails to start).
func CheckSpec(spec string) error {
	kind, arg, _ := strings.Cut(spec, ":")
	switch {
	case (kind == "" || kind == KindReal) && arg != "":
		return fmt.Errorf("nvml %q: real takes no argument; want %s", spec, Usage)
	case kind == "" || kind == KindReal:
	case kind == KindMock:
		if _, ok := mockServers[arg]; !ok {
			return fmt.Errorf("nvml %q: unknown mock %q; want %s", spec, arg, Usage)
		}
	case kind == KindFake:
		if arg == "" {
			return fmt.Errorf("nvml %q: fake needs a file, e.g. fake:/etc/gpumem/fake-node.json", spec)
		}
	default:
		return fmt.Errorf("nvml %q: unknown backend %q; want %s", spec, kind, Usage)
	}
	return nil
}

// Open parses spec ("real", "mock:dgxh100", "fake:/path/node.json"; "" means real) and
// initialises that backend.
func Open(spec string) (*Source, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "", KindReal:
		if arg != "" {
			return nil, fmt.Errorf("nvml %q: real takes no argument; want %s", spec, Usage)
		}
		return openReal(spec)
	case KindMock:
		return openMock(spec, arg)
	case KindFake:
		if arg == "" {
			return nil, fmt.Errorf("nvml %q: fake needs a file, e.g. fake:/etc/gpumem/fake-node.json", spec)
		}
		return OpenFake(spec, arg)
	}
	return nil, fmt.Errorf("nvml %q: unknown backend %q; want %s", spec, kind, Usage)
}

// Usage lists the accepted specs, for flag help and error messages.
const Usage = "real, mock:dgxa100, mock:dgxh100, mock:dgxh200 or fake:PATH"

func openReal(spec string) (*Source, error) {
	lib := nvml.New()
	var ret nvml.Return
	if err := Guard(func() error { ret = lib.Init(); return nil }); err != nil {
		return nil, fmt.Errorf("nvml %q: %w", spec, err)
	}
	switch ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return nil, fmt.Errorf("nvml: libnvidia-ml.so.1 not found: is the NVIDIA driver installed on this node? (use --nvml=mock:dgxh100 or --nvml=fake:PATH to run without a GPU)")
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return nil, fmt.Errorf("nvml: the NVIDIA kernel driver is not loaded (nvidia-smi should fail the same way)")
	case nvml.ERROR_NO_PERMISSION:
		return nil, fmt.Errorf("nvml: no permission to open the GPUs: run as root or as a member of the video group")
	default:
		return nil, fmt.Errorf("nvml: init: %v", ret)
	}
	return &Source{NVML: lib, Kind: KindReal, Spec: spec, CapsMinors: procMigMinors(migMinorsPath), shutdown: lib.Shutdown}, nil
}

// ErrNotImplemented reports a call the backend does not provide: a mock method left
// unset, or an NVML function missing from an old driver.
var ErrNotImplemented = errors.New("not implemented by this NVML backend")

// Guard runs f and turns a panic into an error. go-nvml's mocks panic on a method that
// was never set, and a sidecar must report that, not crash.
func Guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("nvml: %w: %v", ErrNotImplemented, r)
		}
	}()
	return f()
}

// Err turns an NVML return code into an error naming what was asked; nil on success.
func Err(ret nvml.Return, what string) error {
	if ret == nvml.SUCCESS {
		return nil
	}
	if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_FUNCTION_NOT_FOUND {
		return fmt.Errorf("nvml: %s: %w (%v)", what, ErrNotImplemented, ret)
	}
	return fmt.Errorf("nvml: %s: %v", what, ret)
}
