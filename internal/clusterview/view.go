// Package clusterview is the cluster-wide side of gpumem's metrics, computed on the
// controller from what Slurm and the inventory say: pending gpu:mem demand and its wait
// by size class, pending jobs by Slurm's reason, GPU memory free but unusable for the
// sizes that pend (fragmentation), and GPU memory allocated per partition. The node
// sidecars say what GPUs hold; this says what the queue wants and cannot get.
//
// Compute is pure: gpumemctl exporter reads Slurm and hands an Input over; the
// collectors read the View of the last Compute, so a scrape never waits on Slurm.
package clusterview

import (
	"fmt"
	"math/bits"
	"sort"
	"time"

	"github.com/gpumem/gpumem/internal/accounting"
	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/slurmjob"
	"github.com/gpumem/gpumem/internal/steer"
)

// Input is one reading of the cluster.
type Input struct {
	Inventory inventory.Cluster
	UnitMiB   int64              // GPU memory per shard
	Running   []slurmcli.Job     // jobs that hold their allocation, with their GPU use
	Pending   []slurmjob.Pending // pending jobs that ask for shards, in queue order
	// GPUPending are pending jobs that ask for MIG instances or whole GPUs instead, with
	// the GiB equivalent of their request (internal/accounting): demand and wait only, since
	// fragmentation is about shards.
	GPUPending []GPUDemand
	Reasons    map[string]int // every pending job, by Slurm's reason for its wait
	Sizes      []int64        // sizes in shards fragmentation is measured against when nothing pends
	Now        time.Time
}

// GPUDemand is a pending job asking for typed GPUs, valued in GPU memory.
type GPUDemand struct {
	ID        string
	Bytes     uint64    // the GiB equivalent of its GRES per node, in bytes
	Submitted time.Time // zero when not read
}

// GPUDemands values pending typed-GPU jobs in GPU memory with the GiB equivalents the
// accounting policy bills (accounting.Equivalents: a MIG instance as its profile's size, a
// whole GPU as all its shards), under either shard-type naming, so gres.conf's names
// are found whichever gpumem.conf chose. A GRES with no one size (an untyped gpu:2, or a
// type the inventory does not know) is left out.
func GPUDemands(jobs []slurmcli.PendingGRES, inv inventory.Cluster, unitMiB int64) ([]GPUDemand, error) {
	eq := map[string]float64{}
	for _, typed := range []bool{false, true} {
		es, err := accounting.Equivalents(inv, accounting.Options{ShardUnitMiB: unitMiB, ShardTypes: typed})
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			eq[e.TRES] = e.GiB
		}
	}
	var out []GPUDemand
	for _, j := range jobs {
		if gib := accounting.GresGiB(j.TRES, eq); gib > 0 {
			out = append(out, GPUDemand{ID: j.ID, Bytes: uint64(gib) << 30, Submitted: j.Submitted})
		}
	}
	return out, nil
}

// Class is the pending demand of one size class: requests rounded up to a power of two
// GiB, so the label has a handful of values however varied the requests.
type Class struct {
	Jobs        int
	Bytes       uint64        // memory asked, summed
	OldestWait  time.Duration // the longest a job of the class has waited
	SumWait     time.Duration
	WaitCounted int // jobs whose submit time was read
}

// Partition is one partition's GPU memory.
type Partition struct {
	Total, Allocated uint64 // bytes: every GPU of its nodes; what running jobs of the partition hold
}

// View is what the collectors export.
type View struct {
	Classes    map[string]*Class
	Reasons    map[string]int
	Partitions map[string]*Partition
	// Free is the free memory of shareable GPUs; Stranded the part of it on GPUs where
	// none of the pending sizes (else Input.Sizes) fits.
	Free, Stranded uint64
	// Blocked counts pending jobs that the free memory of their partitions would hold
	// in total but no one GPU does: fragmentation, not capacity, keeps them waiting.
	Blocked int
}

// Compute turns an Input into the View.
func Compute(in Input) (*View, error) {
	unit := uint64(in.UnitMiB) << 20
	v := &View{Classes: map[string]*Class{}, Reasons: in.Reasons, Partitions: map[string]*Partition{}}
	for _, p := range in.Pending {
		v.demand(uint64(p.Shards)*unit, p.Submitted, in.Now)
	}
	for _, g := range in.GPUPending {
		v.demand(g.Bytes, g.Submitted, in.Now)
	}
	perGPU := func(mib int64) int64 { return mib / in.UnitMiB }
	cl := steer.NewCluster(in.Inventory, perGPU)
	var uses []slurmjob.Use
	for _, j := range in.Running {
		uses = append(uses, j.Uses...)
	}
	if err := cl.Apply(uses); err != nil {
		return nil, err
	}
	sizes := in.Sizes
	if len(in.Pending) > 0 {
		sizes = nil
		for _, p := range in.Pending {
			sizes = append(sizes, p.Shards)
		}
	}
	free, stranded := steer.Stranded(cl.State, sizes)
	v.Free, v.Stranded = uint64(free)*unit, uint64(stranded)*unit
	v.Blocked = blocked(cl, in.Pending)

	records := map[string][]uint64{} // node -> bytes of each gpu GRES record
	for _, n := range in.Inventory.Nodes {
		for _, part := range n.Partitions {
			p := v.partition(part)
			for _, g := range n.GPUs {
				p.Total += uint64(g.MemoryMiB) << 20
			}
		}
		records[n.Name] = gresRecords(n)
	}
	for _, j := range in.Running {
		if j.Meta.Partition == "" {
			continue
		}
		p := v.partition(j.Meta.Partition)
		for _, u := range j.Uses {
			if !u.Whole {
				p.Allocated += uint64(u.Shards) * unit
			} else if r := records[u.Node]; u.GPU >= 0 && u.GPU < len(r) {
				p.Allocated += r[u.GPU]
			}
		}
	}
	return v, nil
}

// demand counts one pending job of b bytes, submitted then, in its size class.
func (v *View) demand(b uint64, submitted, now time.Time) {
	name := SizeClass(b)
	c := v.Classes[name]
	if c == nil {
		c = &Class{}
		v.Classes[name] = c
	}
	c.Jobs++
	c.Bytes += b
	if !submitted.IsZero() {
		w := max(0, now.Sub(submitted))
		c.OldestWait = max(c.OldestWait, w)
		c.SumWait += w
		c.WaitCounted++
	}
}

func (v *View) partition(name string) *Partition {
	p := v.Partitions[name]
	if p == nil {
		p = &Partition{}
		v.Partitions[name] = p
	}
	return p
}

// gresRecords is the memory of each gpu GRES record of a node, in gres.conf order: a
// MIG instance or a whole GPU each.
func gresRecords(n inventory.Node) []uint64 {
	var out []uint64
	for _, g := range n.GPUs {
		if g.MIG && len(g.Instances) > 0 {
			for _, in := range g.Instances {
				out = append(out, uint64(in.MemoryMiB)<<20)
			}
			continue
		}
		out = append(out, uint64(g.MemoryMiB)<<20)
	}
	return out
}

// blocked counts the pending jobs whose partitions have enough free shards in total
// but on no single GPU.
func blocked(cl *steer.Cluster, pending []slurmjob.Pending) int {
	var n int
	for _, p := range pending {
		var sum, most int64
		for _, nd := range cl.State.Nodes {
			if !inAny(nd.Pools, p.Partitions) {
				continue
			}
			for _, dv := range nd.Devices {
				if dv.Shareable {
					sum += dv.Free()
					most = max(most, dv.Free())
				}
			}
		}
		if sum >= p.Shards && most < p.Shards {
			n++
		}
	}
	return n
}

func inAny(pools, parts []string) bool {
	for _, a := range parts {
		for _, b := range pools {
			if a == b {
				return true
			}
		}
	}
	return false
}

// SizeClass names the class of a request of b bytes: the power of two GiB at or above
// it ("1G", "2G", "4G", ... "128G").
func SizeClass(b uint64) string {
	gib := (b + 1<<30 - 1) >> 30
	if gib <= 1 {
		return "1G"
	}
	return fmt.Sprintf("%dG", uint64(1)<<bits.Len64(gib-1))
}

// ClassNames lists the classes of a view in size order.
func (v *View) ClassNames() []string {
	names := make([]string, 0, len(v.Classes))
	for n := range v.Classes {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool {
		return len(names[a]) < len(names[b]) || len(names[a]) == len(names[b]) && names[a] < names[b]
	})
	return names
}
