package nvmlsrc

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"

	"github.com/gpumem/gpumem/internal/atomicfile"
)

// FakeNode describes a node's GPUs in a small JSON file (format in docs/gres.md). The
// hardware part (models, MIG layout) is read once; the live part (processes,
// temperature, power, utilisation, XIDs, lost) is re-read whenever the file changes, so
// a lab can start a job and write its PID into the file.
type FakeNode struct {
	Driver string    `json:"driver_version,omitempty"`
	GPUs   []FakeGPU `json:"gpus"`
	// MemoryLimits, when present, gives the node's NVML the per-cgroup memory limits.
	MemoryLimits *FakeMemoryLimits `json:"memory_limits,omitempty"`

	mu      sync.Mutex
	fixedGI *int // while the file's layout is made: the id its next instance gets
	path    string
	modTime time.Time
	size    int64
}

// FakeGPU is one fake GPU.
type FakeGPU struct {
	Model     string   `json:"model,omitempty"`      // a key of FakeModels; empty with name+memory_mib for a GPU without MIG
	Name      string   `json:"name,omitempty"`       // NVML product name; defaults to the model's
	MemoryMiB uint64   `json:"memory_mib,omitempty"` // defaults to the model's
	UUID      string   `json:"uuid,omitempty"`       // defaults to a stable GPU-... from the index
	Minor     *int     `json:"minor,omitempty"`      // /dev/nvidiaN; defaults to the index
	Cores     string   `json:"cores,omitempty"`      // CPU affinity, e.g. "0-15"; empty: none reported
	MIG       *FakeMIG `json:"mig,omitempty"`

	Processes    []FakeProcess `json:"processes,omitempty"`
	TemperatureC uint32        `json:"temperature_c,omitempty"`
	PowerMW      uint32        `json:"power_mw,omitempty"`
	UtilGPU      uint32        `json:"utilization_gpu,omitempty"`    // percent
	UtilMemory   uint32        `json:"utilization_memory,omitempty"` // percent
	XIDs         []FakeXID     `json:"xids,omitempty"`               // delivered once each, in order, through NVML events
	Lost         bool          `json:"lost,omitempty"`               // every live query answers ERROR_GPU_IS_LOST

	xidsSent int
}

// FakeMIG is a fake GPU's MIG state.
type FakeMIG struct {
	Enabled   bool           `json:"enabled"`
	Pending   *bool          `json:"pending,omitempty"` // mode after the next GPU reset; defaults to enabled
	Instances []FakeInstance `json:"instances,omitempty"`
}

// FakeInstance is one MIG GPU instance of a fake GPU (with one full compute instance): a
// profile at a start slot.
type FakeInstance struct {
	Profile string `json:"profile"` // e.g. "3g.40gb"
	Start   int    `json:"start"`   // placement start slot
	// GI fixes the GPU instance id in a fake node, to mirror a real node's ids (and so
	// its /dev/nvidia-caps files); NVML picks ids itself, so ApplyMIG ignores it.
	GI *int `json:"gi,omitempty"`
}

// FakeProcess is one compute process.
type FakeProcess struct {
	PID     uint32 `json:"pid"`
	UsedMiB uint64 `json:"used_mib"`
	GI      *int   `json:"gi,omitempty"` // MIG GPU instance id the process runs in
	CI      *int   `json:"ci,omitempty"`
}

// FakeXID is one XID error event.
type FakeXID struct {
	XID int  `json:"xid"`
	GI  *int `json:"gi,omitempty"`
	CI  *int `json:"ci,omitempty"`
}

// FakeModels are the GPU models a fake node can hold, with go-nvml's MIG profiles. A
// model MIG's catalog knows (internal/mig) is keyed by the catalog's key, so that one
// name means one model in a fake node, `gpumemctl mig plan --model` and a desired
// layout alike; another board of the same catalog model adds its form factor
// (a100-40gb-pcie). A test holds the keys to the catalog.
var FakeModels = map[string]gpus.Config{
	"a100-40gb":      gpus.A100_SXM4_40GB,
	"a100-80gb":      gpus.A100_SXM4_80GB,
	"a100-40gb-pcie": gpus.A100_PCIE_40GB,
	"a100-80gb-pcie": gpus.A100_PCIE_80GB,
	"a30":            gpus.A30_PCIE_24GB,
	"h100-80gb":      gpus.H100_SXM5_80GB,
	"h200-141gb":     gpus.H200_SXM5_141GB,
	"b200":           gpus.B200_SXM5_180GB,
}

// renamedModels are the fake models' keys before they were the catalog's: a fake node
// that names one is told the key now.
var renamedModels = map[string]string{
	"h100": "h100-80gb", "h200": "h200-141gb", "a100-pcie-40gb": "a100-40gb-pcie", "a100-pcie-80gb": "a100-80gb-pcie",
}

func modelNames() string {
	var names []string
	for k := range FakeModels {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// LoadFake reads and checks a fake node file.
func LoadFake(path string) (*FakeNode, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("fake node: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fake node: %w", err)
	}
	n, err := DecodeFake(b)
	if err != nil {
		return nil, fmt.Errorf("fake node %s: %w", path, err)
	}
	n.path, n.modTime, n.size = path, fi.ModTime(), fi.Size()
	return n, nil
}

// DecodeFake parses a fake node description; unknown fields are errors so that a typo
// never silently means "no processes".
func DecodeFake(b []byte) (*FakeNode, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var n FakeNode
	if err := dec.Decode(&n); err != nil {
		return nil, err
	}
	return &n, n.check()
}

func (n *FakeNode) check() error {
	if len(n.GPUs) == 0 {
		return fmt.Errorf("no gpus: want at least one {\"model\": ...}")
	}
	if n.MemoryLimits != nil {
		if err := n.MemoryLimits.check(); err != nil {
			return err
		}
	}
	for i, g := range n.GPUs {
		if g.Model != "" {
			if now, ok := renamedModels[g.Model]; ok {
				return fmt.Errorf("gpu %d: model %q is called %q now, as in MIG's catalog", i, g.Model, now)
			}
			if _, ok := FakeModels[g.Model]; !ok {
				return fmt.Errorf("gpu %d: unknown model %q; want one of %s, or no model with name and memory_mib", i, g.Model, modelNames())
			}
		} else if g.Name == "" || g.MemoryMiB == 0 {
			return fmt.Errorf("gpu %d: without a model it needs name and memory_mib > 0", i)
		}
		if g.MIG != nil && len(g.MIG.Instances) > 0 && g.Model == "" {
			return fmt.Errorf("gpu %d: MIG instances need a model with MIG profiles (%s)", i, modelNames())
		}
		if g.MIG != nil && !g.MIG.Enabled && len(g.MIG.Instances) > 0 {
			return fmt.Errorf("gpu %d: MIG instances listed but mig.enabled is false", i)
		}
		if g.Cores != "" {
			if _, err := ParseCPUList(g.Cores); err != nil {
				return fmt.Errorf("gpu %d: cores: %w", i, err)
			}
		}
		if g.UtilGPU > 100 || g.UtilMemory > 100 {
			return fmt.Errorf("gpu %d: utilization is a percentage, 0-100", i)
		}
	}
	return nil
}

// refresh re-reads the live fields when the file changed. A file caught half-written
// (or broken by hand) keeps the last good values: the fake must never make a healthy
// node look lost.
func (n *FakeNode) refresh() {
	if n.path == "" {
		return
	}
	fi, err := os.Stat(n.path)
	if err != nil || (fi.ModTime().Equal(n.modTime) && fi.Size() == n.size) {
		return
	}
	b, err := os.ReadFile(n.path)
	if err != nil {
		return
	}
	m, err := DecodeFake(b)
	if err != nil || len(m.GPUs) != len(n.GPUs) {
		return
	}
	n.modTime, n.size = fi.ModTime(), fi.Size()
	for i := range n.GPUs {
		g, f := &n.GPUs[i], m.GPUs[i]
		g.Processes, g.TemperatureC, g.PowerMW = f.Processes, f.TemperatureC, f.PowerMW
		g.UtilGPU, g.UtilMemory, g.Lost = f.UtilGPU, f.UtilMemory, f.Lost
		g.XIDs = f.XIDs
		if g.xidsSent > len(g.XIDs) {
			g.xidsSent = len(g.XIDs)
		}
	}
}

// SetProcesses replaces GPU i's processes, for tests that drive the fake directly.
func (n *FakeNode) SetProcesses(i int, ps []FakeProcess) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.GPUs[i].Processes = append([]FakeProcess(nil), ps...)
}

// AddXID queues an XID event on GPU i.
func (n *FakeNode) AddXID(i int, x FakeXID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.GPUs[i].XIDs = append(n.GPUs[i].XIDs, x)
}

// SetLost marks GPU i as fallen off the bus (or back).
func (n *FakeNode) SetLost(i int, lost bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.GPUs[i].Lost = lost
}

// SaveMIG records GPU i's MIG instances in the fake node's file, as a real GPU keeps
// its instances when the process that made them exits: a gpumemd started again (after
// a kill -9 mid-apply, say) and every other reader of the file then see the layout the
// apply left, GPU instance ids included. The rest of the file is kept as it is on disk.
func (n *FakeNode) SaveMIG(i int, instances []FakeInstance) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if i < 0 || i >= len(n.GPUs) || n.GPUs[i].MIG == nil {
		return fmt.Errorf("fake node: GPU %d is not in MIG mode", i)
	}
	n.GPUs[i].MIG.Instances = append([]FakeInstance(nil), instances...)
	if n.path == "" {
		return nil
	}
	b, err := os.ReadFile(n.path)
	if err != nil {
		return fmt.Errorf("fake node: %w", err)
	}
	disk, err := DecodeFake(b)
	if err != nil || len(disk.GPUs) != len(n.GPUs) || disk.GPUs[i].MIG == nil {
		return fmt.Errorf("fake node %s changed under the apply: %v", n.path, err)
	}
	disk.GPUs[i].MIG.Instances = n.GPUs[i].MIG.Instances
	out, err := json.MarshalIndent(disk, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(n.path, append(out, '\n'), 0o644); err != nil {
		return fmt.Errorf("fake node: %w", err)
	}
	// The live fields did not change: no need to re-read them.
	if fi, err := os.Stat(n.path); err == nil {
		n.modTime, n.size = fi.ModTime(), fi.Size()
	}
	return nil
}
