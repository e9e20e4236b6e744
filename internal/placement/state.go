// Package placement is the pure-Go placement core: the allocation state of a cluster's
// GPUs and the policies that choose where a demand lands. No cgo, no I/O, no globals, so
// the same code runs inside slurmctld, in gpumemctl, in tests and in the trace replay.
//
// Capacity is in abstract units: MiB in production, milli-GPU in the trace replay.
package placement

import (
	"errors"
	"fmt"
	"slices"
)

// Kind is a kind of GPU slice; a Demand allows a set of them.
type Kind uint8

const (
	Shard Kind = 1 << iota // a memory slice of a shared full GPU
	MIG                    // one MIG instance, taken whole
	Whole                  // a full GPU, taken whole
)

func (k Kind) String() string {
	switch k {
	case Shard:
		return "shard"
	case MIG:
		return "mig"
	case Whole:
		return "whole"
	}
	return fmt.Sprintf("kinds(%#x)", uint8(k))
}

// Device is one allocatable GPU: a full GPU, or one MIG instance of a GPU in MIG mode.
type Device struct {
	GPU       int    // physical GPU index on the node
	Model     string // Slurm type of the physical GPU, for model constraints
	Profile   string // MIG profile; "" for a full GPU
	Capacity  int64  // units
	Used      int64  // units taken; Capacity when taken whole
	Whole     bool   // taken whole
	Shareable bool   // a full GPU that may be sliced (Slurm shard)
}

// Free is what is left on the device.
func (d *Device) Free() int64 { return d.Capacity - d.Used }

// Node is one node's resources and what is allocated on it.
type Node struct {
	Name             string
	Pools            []string // Slurm partitions
	CPU, Mem         int64    // capacity (CPU in the caller's unit, e.g. milli-cores)
	UsedCPU, UsedMem int64
	Devices          []Device
}

// Demand is what one job needs on one node.
type Demand struct {
	CPU, Mem int64
	GPUs     int      // devices needed; 0 = no GPU
	Units    int64    // units needed on each device (Shard: taken; MIG/Whole: must hold)
	Kinds    Kind     // allowed kinds; 0 with GPUs > 0 means all
	Models   []string // allowed GPU models; empty = any
	Pools    []string // allowed pools; empty = any
}

// Choice is where a demand landed.
type Choice struct {
	Node    int
	Kind    Kind
	Devices []int // indices into Node.Devices
}

// Policy chooses a placement for a demand in the current state, or reports none.
// A policy must not modify the state; the caller commits the choice.
type Policy interface {
	Name() string
	Place(s *State, d *Demand) (Choice, bool)
}

// State is the allocation state of a cluster. Change it only through Commit and Release
// (or call Reindex after editing Nodes), so the index the policies search stays true.
// A State is not safe for concurrent use: even Place may build the index.
type State struct {
	Nodes []Node
	idx   *index
	log   *changeLog // nodes changed through Commit and Release, for policies that follow
}

// NewState copies nodes into a fresh state.
func NewState(nodes []Node) *State {
	s := &State{Nodes: make([]Node, len(nodes)), log: &changeLog{}}
	for i, n := range nodes {
		n.Pools = append([]string(nil), n.Pools...)
		n.Devices = append([]Device(nil), n.Devices...)
		s.Nodes[i] = n
	}
	return s
}

// Clone deep-copies the state.
func (s *State) Clone() *State {
	c := NewState(s.Nodes)
	if s.idx != nil && s.idx.n == len(s.Nodes) {
		c.idx = s.idx.clone() // copying is much cheaper than rebuilding
	}
	return c
}

func (d *Demand) kinds() Kind {
	if d.Kinds == 0 {
		return Shard | MIG | Whole
	}
	return d.Kinds
}

// NodeAdmits reports whether node n's pool, CPU and host memory admit d, ignoring GPUs.
func (s *State) NodeAdmits(n int, d *Demand) bool {
	nd := &s.Nodes[n]
	if nd.CPU-nd.UsedCPU < d.CPU || nd.Mem-nd.UsedMem < d.Mem {
		return false
	}
	return len(d.Pools) == 0 || anyIn(nd.Pools, d.Pools)
}

// DeviceFits reports whether device i of node n can take one unit of d as kind k.
func (s *State) DeviceFits(n, i int, d *Demand, k Kind) bool {
	dv := &s.Nodes[n].Devices[i]
	if dv.Whole || (len(d.Models) > 0 && !slices.Contains(d.Models, dv.Model)) {
		return false
	}
	switch k {
	case Shard:
		return dv.Shareable && dv.Profile == "" && dv.Free() >= d.Units
	case MIG:
		return dv.Profile != "" && dv.Capacity >= d.Units
	case Whole:
		return dv.Profile == "" && dv.Used == 0 && dv.Capacity >= d.Units
	}
	return false
}

// Commit applies a choice. It checks the choice against the state, so an invalid choice
// never over-allocates anything.
func (s *State) Commit(c Choice, d *Demand) error {
	if err := s.check(c, d); err != nil {
		return err
	}
	nd := &s.Nodes[c.Node]
	nd.UsedCPU += d.CPU
	nd.UsedMem += d.Mem
	for _, i := range c.Devices {
		dv := &nd.Devices[i]
		if c.Kind == Shard {
			dv.Used += d.Units
		} else {
			dv.Used, dv.Whole = dv.Capacity, true
		}
	}
	s.touch(c.Node)
	return nil
}

// Release undoes a committed choice exactly.
func (s *State) Release(c Choice, d *Demand) error {
	if c.Node < 0 || c.Node >= len(s.Nodes) {
		return fmt.Errorf("placement: release on node %d of %d", c.Node, len(s.Nodes))
	}
	nd := &s.Nodes[c.Node]
	if nd.UsedCPU < d.CPU || nd.UsedMem < d.Mem {
		return errors.New("placement: release of CPU or memory never committed")
	}
	for _, i := range c.Devices {
		if i < 0 || i >= len(nd.Devices) {
			return fmt.Errorf("placement: release of device %d of %d", i, len(nd.Devices))
		}
		dv := &nd.Devices[i]
		if (c.Kind == Shard && (dv.Whole || dv.Used < d.Units)) || (c.Kind != Shard && !dv.Whole) {
			return fmt.Errorf("placement: release of %s on device %d never committed", c.Kind, i)
		}
	}
	nd.UsedCPU -= d.CPU
	nd.UsedMem -= d.Mem
	for _, i := range c.Devices {
		dv := &nd.Devices[i]
		if c.Kind == Shard {
			dv.Used -= d.Units
		} else {
			dv.Used, dv.Whole = 0, false
		}
	}
	s.touch(c.Node)
	return nil
}

func (s *State) check(c Choice, d *Demand) error {
	if c.Node < 0 || c.Node >= len(s.Nodes) {
		return fmt.Errorf("placement: node %d of %d", c.Node, len(s.Nodes))
	}
	if !s.NodeAdmits(c.Node, d) {
		return fmt.Errorf("placement: node %s does not admit the demand", s.Nodes[c.Node].Name)
	}
	if len(c.Devices) != d.GPUs {
		return fmt.Errorf("placement: %d devices chosen for %d GPUs", len(c.Devices), d.GPUs)
	}
	if d.GPUs > 0 && c.Kind&d.kinds() == 0 {
		return fmt.Errorf("placement: kind %s not allowed", c.Kind)
	}
	for j, i := range c.Devices {
		if i < 0 || i >= len(s.Nodes[c.Node].Devices) {
			return fmt.Errorf("placement: device %d of %d", i, len(s.Nodes[c.Node].Devices))
		}
		for _, prev := range c.Devices[:j] {
			if prev == i {
				return fmt.Errorf("placement: device %d chosen twice", i)
			}
		}
		if !s.DeviceFits(c.Node, i, d, c.Kind) {
			return fmt.Errorf("placement: device %d of node %s cannot take %s of %d units", i, s.Nodes[c.Node].Name, c.Kind, d.Units)
		}
	}
	return nil
}

func anyIn(have, want []string) bool {
	for _, w := range want {
		if slices.Contains(have, w) {
			return true
		}
	}
	return false
}
