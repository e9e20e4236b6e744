package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Each GPU has one gpumem_gpu_fence series, on dcgm-exporter's labels without hpc_job:
// the fence gpumemd found, none where it found none or was not told, hardware for MIG.
func TestGPUFenceSeries(t *testing.T) {
	st := pollState()
	st.Fences = map[int]string{0: "driver", 2: "none"}
	st.FenceBackend = "misc"
	e := NewExporter()
	e.Set(st)
	want := `
# HELP gpumem_gpu_fence 1 for the memory fence that holds a job to its slice on this GPU: hardware (MIG), driver (NVML per-cgroup limit), mps (MPS limit set by root) or none (only gpumemd's kill); backend is how the driver holds its limit (dmem or misc), empty for other fences.
# TYPE gpumem_gpu_fence gauge
gpumem_gpu_fence{Hostname="g1",UUID="GPU-0",backend="misc",fence="driver",gpu="0",modelName="NVIDIA H100 80GB HBM3"} 1
gpumem_gpu_fence{Hostname="g1",UUID="GPU-1",backend="",fence="none",gpu="1",modelName="NVIDIA H100 80GB HBM3"} 1
gpumem_gpu_fence{Hostname="g1",UUID="GPU-2",backend="",fence="hardware",gpu="2",modelName="NVIDIA H100 80GB HBM3"} 1
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "gpumem_gpu_fence"); err != nil {
		t.Fatal(err)
	}
}
