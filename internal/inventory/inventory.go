// Package inventory holds what the GPU nodes of a cluster really have: the one model
// that gres.conf and slurm.conf are generated from and that the job_submit plugin
// admits against, so that Slurm and the plugin can never disagree.
//
// Data flows one way: NVML (gpumemd) -> inventory -> gres.conf / slurm.conf / plugin.
// The package does no NVML and no Slurm I/O beyond reading and writing its own JSON.
package inventory

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/gpumem/gpumem/internal/versioned"
)

// Sharing says how Slurm is told about a full (non-MIG) GPU.
const (
	// SharingShard exposes the GPU both as one `gpu` and as memory slices (`shard`);
	// Slurm lets a job use it either whole or as shards, never both at once.
	SharingShard = "shard"
	// SharingWhole exposes the GPU only as a whole `gpu`.
	SharingWhole = "whole"
)

// Cluster is every GPU node known to gpumem.
type Cluster struct {
	Nodes []Node `json:"nodes"`
}

// Node is one Slurm node. Partitions come from slurm.conf, the rest from NVML.
type Node struct {
	Name       string   `json:"name"`
	Partitions []string `json:"partitions,omitempty"`
	CPUs       int      `json:"cpus,omitempty"`
	MemoryMiB  int64    `json:"memory_mib,omitempty"` // host RAM
	Features   []string `json:"features,omitempty"`
	GPUs       []GPU    `json:"gpus"`
}

// GPU is one physical GPU.
type GPU struct {
	Index      int           `json:"index"`          // NVML index
	Minor      int           `json:"minor"`          // /dev/nvidiaN
	Name       string        `json:"name"`           // NVML product name, e.g. "NVIDIA H100 80GB HBM3"
	Type       string        `json:"type"`           // Slurm GRES type, e.g. "h100"
	UUID       string        `json:"uuid,omitempty"` // GPU-...
	MemoryMiB  int64         `json:"memory_mib"`     // NVML total memory
	Cores      string        `json:"cores,omitempty"`
	Sharing    string        `json:"sharing,omitempty"` // SharingShard (default) or SharingWhole; ignored in MIG mode
	MIG        bool          `json:"mig,omitempty"`     // MIG mode currently enabled
	MIGPending bool          `json:"mig_pending,omitempty"`
	Instances  []MIGInstance `json:"mig_instances,omitempty"`
	// Fence is the strongest memory fence gpumemd found working on this GPU for a job's
	// slice (FenceHardware, FenceDriver, FenceMPS or FenceNone); empty in files older
	// than format version 2, which the controller reads as FenceNone.
	Fence string `json:"fence,omitempty"`
	// FenceBackend is, on a GPU that holds the driver fence, how the driver holds the
	// limit: "dmem" (the kernel's controller, Linux 6.14+) or "misc" (the driver's
	// own). Version 3.
	FenceBackend string `json:"fence_backend,omitempty"`
}

// The fences a GPU can hold a job's memory to, strongest first. Each names what stops
// a job from taking more than it was given; the kill of a job over its slice
// (gpumemd's usage policy) stays the last layer under all of them.
const (
	FenceHardware = "hardware" // MIG: the instance is the limit
	FenceDriver   = "driver"   // NVML per-cgroup hard limit, set by root before the job runs
	FenceMPS      = "mps"      // MPS control daemon's pinned-memory limit, set by root
	FenceNone     = "none"     // nothing beyond gpumemd's measurement and kill
)

// FenceOf is the fence a GPU holds, FenceNone when the inventory does not say.
func (g GPU) FenceOf() string {
	if g.MIG {
		return FenceHardware
	}
	if g.Fence == "" {
		return FenceNone
	}
	return g.Fence
}

// MIGInstance is one MIG GPU instance (with its compute instance) on a GPU in MIG mode.
type MIGInstance struct {
	Profile   string   `json:"profile"`    // e.g. "3g.40gb"
	MemoryMiB int64    `json:"memory_mib"` // NVML's real size, less than the name says
	GI        int      `json:"gi"`
	CI        int      `json:"ci"`
	Start     int      `json:"start"` // first memory slot of its placement
	Slices    int      `json:"slices"`
	Files     []string `json:"files,omitempty"` // /dev/nvidiaN plus its /dev/nvidia-caps files
}

// Shared reports whether a full GPU is exposed as memory slices.
func (g GPU) Shared() bool { return !g.MIG && g.Sharing != SharingWhole }

// FormatVersion is the version of the inventory file format: gpumemd on each node
// writes it and the plugins and gpumemctl of another release may read it. A file
// without a version predates the field and is version 1. Version 2 adds GPU.Fence, 3 GPU.FenceBackend.
const FormatVersion = 3

func init() {
	if versioned.Inventory.Current != FormatVersion {
		panic("inventory: FormatVersion and versioned.Inventory disagree")
	}
}

// file is the inventory as a file holds it.
type file struct {
	Version int `json:"version,omitempty"`
	Cluster
}

// Decode parses and validates a JSON inventory.
func Decode(b []byte) (Cluster, error) {
	var f file
	if err := versioned.Strict(b, &f); err != nil {
		return Cluster{}, fmt.Errorf("inventory: %w", jsonError(b, err))
	}
	if err := versioned.Inventory.Check(f.Version); err != nil {
		return Cluster{}, err
	}
	return f.Cluster, f.Cluster.Validate()
}

// Encode renders the inventory as stable, indented JSON (nodes sorted by name),
// carrying FormatVersion.
func (c Cluster) Encode() ([]byte, error) {
	c.Nodes = append([]Node(nil), c.Nodes...)
	sort.Slice(c.Nodes, func(i, j int) bool { return c.Nodes[i].Name < c.Nodes[j].Name })
	b, err := json.MarshalIndent(file{FormatVersion, c}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
