package trace

import (
	"fmt"
	"io"
)

// MilliPerGPU is the trace's unit of GPU: a share of one GPU in thousandths.
const MilliPerGPU = 1000

// Pod is one task of a workload: what it asks for, not where it ran.
type Pod struct {
	Name     string
	CPUMilli int64
	MemMiB   int64
	NumGPU   int
	GPUMilli int64    // share of each GPU, 1-1000; 0 with NumGPU 0
	Models   []string // allowed GPU models; empty = any
}

// GPUDemand is the milli-GPU the pod takes in all: the unit the protocol counts
// arrivals and allocation in.
func (p *Pod) GPUDemand() int64 { return int64(p.NumGPU) * p.GPUMilli }

// Shared reports whether the pod takes a share of one GPU rather than whole GPUs.
func (p *Pod) Shared() bool { return p.NumGPU == 1 && p.GPUMilli < MilliPerGPU }

func (p *Pod) validate() error {
	switch {
	case p.NumGPU == 0 && p.GPUMilli != 0:
		return fmt.Errorf("pod %s: gpu_milli %d without GPUs, want 0", p.Name, p.GPUMilli)
	case p.NumGPU > 0 && (p.GPUMilli < 1 || p.GPUMilli > MilliPerGPU):
		return fmt.Errorf("pod %s: gpu_milli %d, want 1-%d", p.Name, p.GPUMilli, MilliPerGPU)
	case p.NumGPU > 1 && p.GPUMilli != MilliPerGPU:
		return fmt.Errorf("pod %s: %d GPUs of %d milli each, want whole GPUs (%d) when more than one", p.Name, p.NumGPU, p.GPUMilli, MilliPerGPU)
	}
	return nil
}

// ReadPods reads a task list (columns name, cpu_milli, memory_mib, num_gpu, gpu_milli,
// and gpu_spec where the file has it, as the multi-GPU lists do not; the timing columns
// are not needed by the protocol and are ignored).
func ReadPods(name string, r io.Reader) ([]Pod, error) {
	t, err := readTable(name, r, "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
	if err != nil {
		return nil, err
	}
	out := make([]Pod, 0, len(t.rows))
	for i := range t.rows {
		p, err := podAt(t, i, "name")
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no tasks", name)
	}
	return out, nil
}

// podAt reads the request columns shared by task lists and the reference sequence.
func podAt(t *table, i int, nameCol string) (Pod, error) {
	v, err := t.ints(i, "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
	if err != nil {
		return Pod{}, err
	}
	p := Pod{Name: t.str(i, nameCol), CPUMilli: v[0], MemMiB: v[1], NumGPU: int(v[2]), GPUMilli: v[3], Models: models(t.str(i, "gpu_spec"))}
	if err := p.validate(); err != nil {
		return Pod{}, fmt.Errorf("%s line %d: %w", t.name, i+2, err)
	}
	return p, nil
}
