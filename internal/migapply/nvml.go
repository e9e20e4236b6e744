package migapply

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpumem/gpumem/internal/discover"
	"github.com/gpumem/gpumem/internal/mig"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
)

// NVML is the node's GPUs through nvmlsrc: real NVML or its fake.
type NVML struct{ Src *nvmlsrc.Source }

// Layout reads gpu's instances as discovery reports them.
func (n NVML) Layout(gpu int) (mig.Layout, error) {
	gpus, err := discover.GPUs(n.Src, discover.Options{})
	if err != nil {
		return nil, err
	}
	if gpu < 0 || gpu >= len(gpus) {
		return nil, fmt.Errorf("this node has %d GPUs", len(gpus))
	}
	return mig.LayoutOf(gpus[gpu]), nil
}

func (n NVML) device(gpu int) (nvml.Device, error) {
	var dev nvml.Device
	var ret nvml.Return
	if err := nvmlsrc.Guard(func() error { dev, ret = n.Src.NVML.DeviceGetHandleByIndex(gpu); return nil }); err != nil {
		return nil, err
	}
	return dev, nvmlsrc.Err(ret, fmt.Sprintf("GPU %d", gpu))
}

// Check is nvmlsrc.CheckMIG on gpu.
func (n NVML) Check(gpu int, want mig.Layout) error {
	dev, err := n.device(gpu)
	if err != nil {
		return err
	}
	return nvmlsrc.CheckMIG(dev, want)
}

// Destroy is nvmlsrc.DestroyMIG on gpu.
func (n NVML) Destroy(gpu int, want mig.Layout) error {
	dev, err := n.device(gpu)
	if err != nil {
		return err
	}
	if err := nvmlsrc.DestroyMIG(dev, want); err != nil {
		return err
	}
	return n.persist(gpu)
}

// Create is nvmlsrc.CreateMIG on gpu.
func (n NVML) Create(gpu int, want mig.Layout) error {
	dev, err := n.device(gpu)
	if err != nil {
		return err
	}
	if err := nvmlsrc.CreateMIG(dev, want); err != nil {
		return err
	}
	return n.persist(gpu)
}

// persist writes a fake GPU's instances back to its node file, where a real GPU
// would simply keep them; on real NVML it does nothing.
func (n NVML) persist(gpu int) error {
	if n.Src.Fake == nil {
		return nil
	}
	gpus, err := discover.GPUs(n.Src, discover.Options{})
	if err != nil {
		return err
	}
	var ins []nvmlsrc.FakeInstance
	for _, in := range gpus[gpu].Instances {
		gi := in.GI
		ins = append(ins, nvmlsrc.FakeInstance{Profile: in.Profile, Start: in.Start, GI: &gi})
	}
	return n.Src.Fake.SaveMIG(gpu, ins)
}
