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
	GI      int
	Profile string // its GPU instance profile's name, as internal/mig derives it (1g.10gb)
	Total   uint64 // bytes
	Start   int    // first memory slot of its placement: gres.conf lists a GPU's instances in this order
}

// NoInstance marks a process that runs on a full GPU rather than a MIG instance;
// NVML reports 0xFFFFFFFF there.
const NoInstance = -1

// Proc is one compute process on a GPU.
type Proc struct {
	PID  int
	Used uint64 // bytes; 0 when Unknown
	GI   int    // MIG GPU instance, or NoInstance
	// Unknown is set when NVML gave no size for the process's memory: its "not
	// available" value (all ones, which read as a size is 16 EiB), or more than the GPU
	// has. Such a process is counted as one of unknown size and never acted on.
	Unknown bool
}

// procSize reads the memory NVML reports for a process on a GPU of total bytes: ok is
// false for NVML's "not available" (VALUE_NOT_AVAILABLE, all ones) and for anything
// more than the GPU holds, which no process can use.
func procSize(used, total uint64) (uint64, bool) {
	if used == notAvailable || used > total {
		return 0, false
	}
	return used, true
}

// notAvailable is NVML's NVML_VALUE_NOT_AVAILABLE in a 64-bit field.
const notAvailable = ^uint64(0)

// Instance returns the MIG instance gi of the GPU.
func (g *GPU) Instance(gi int) (Instance, bool) {
	for _, in := range g.Instances {
		if in.GI == gi {
			return in, true
		}
	}
	return Instance{}, false
}
