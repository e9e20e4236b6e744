// Package usage measures what a node's GPUs hold right now and which Slurm job holds
// it: one NVML poll becomes a Snapshot, its processes become per-job sums, and a
// policy (record, warn, kill) acts on jobs that outgrow their slice.
//
// Shards do not fence memory, so this is the only place where "20 GiB" is checked
// against what a job really uses.
package usage

import "time"

// Snapshot is one poll of a node's GPUs. Values NVML could not give are NaN (float
// telemetry) so that collectors can leave them out instead of reporting zeros.
type Snapshot struct {
	Time time.Time
	GPUs []GPU
}

// GPU is one physical GPU as seen in one poll.
type GPU struct {
	Index     int
	UUID      string
	Name      string
	Total     uint64 // bytes
	Used      uint64 // bytes
	Free      uint64 // bytes
	TempC     float64
	PowerW    float64
	UtilPct   float64
	MIG       bool
	Instances []Instance // MIG GPU instances, empty outside MIG mode
	Procs     []Proc
	// Err is set when the GPU answered its handle but not its memory: the GPU is
	// present yet unusable, which health treats like a lost GPU.
	Err error
}

// Instance is one MIG GPU instance.
type Instance struct {
	GI    int
	Total uint64 // bytes
}

// NoInstance marks a process that runs on a full GPU rather than a MIG instance;
// NVML reports 0xFFFFFFFF there.
const NoInstance = -1

// Proc is one compute process on a GPU.
type Proc struct {
	PID  int
	Used uint64 // bytes
	GI   int    // MIG GPU instance, or NoInstance
}

// Instance returns the MIG instance gi of the GPU.
func (g *GPU) Instance(gi int) (Instance, bool) {
	for _, in := range g.Instances {
		if in.GI == gi {
			return in, true
		}
	}
	return Instance{}, false
}
