package steer

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/versioned"
)

// Snapshot is what `gpumemctl steer --snapshot` tells the job_submit plugin: the shards
// taken on each shared GPU (running jobs, and pending jobs already pinned to a GPU), and
// the sizes to keep room for. The plugin places shard jobs on it, plus its own pins
// made after Taken, when gpumem.conf says ShardTypes = per-gpu.
type Snapshot struct {
	// Version is the format version (SnapshotVersion when written); a snapshot without
	// one predates the field and is version 1.
	Version int `json:"version,omitempty"`
	// Taken is when steer began reading Slurm: pins the plugin made before it are in
	// the snapshot, later ones are not.
	Taken time.Time `json:"taken"`
	// Sizes are the target sizes, in shards (steer's --sizes or what its jobs asked);
	// empty: the plugin's TargetSizes.
	Sizes []int64  `json:"sizes,omitempty"`
	GPUs  []GPUUse `json:"gpus"`
}

// SnapshotVersion is the version of the snapshot format: steer and the plugin may be
// of different releases.
var SnapshotVersion = versioned.UsageSnapshot.Current

// GPUUse is the shards taken on one GPU, by node and NVML index.
type GPUUse struct {
	Node   string `json:"node"`
	GPU    int    `json:"gpu"`
	Shards int64  `json:"shards"`
}

// Encode renders the snapshot as JSON, one line, carrying SnapshotVersion.
func (s Snapshot) Encode() ([]byte, error) {
	s.Version = SnapshotVersion
	b, err := json.Marshal(s)
	return append(b, '\n'), err
}

// DecodeSnapshot reads and checks a snapshot.
func DecodeSnapshot(b []byte) (Snapshot, error) {
	var s Snapshot
	if err := versioned.Strict(b, &s); err != nil {
		return s, fmt.Errorf("usage snapshot: %w; want the JSON gpumemctl steer --snapshot writes", err)
	}
	if err := versioned.UsageSnapshot.Check(s.Version); err != nil {
		return s, err
	}
	if s.Taken.IsZero() {
		return s, errors.New("usage snapshot: no \"taken\" time; want the JSON gpumemctl steer --snapshot writes")
	}
	for _, z := range s.Sizes {
		if z <= 0 {
			return s, fmt.Errorf("usage snapshot: size %d; want positive shard counts", z)
		}
	}
	for _, g := range s.GPUs {
		if g.Node == "" || g.GPU < 0 || g.Shards < 0 {
			return s, fmt.Errorf("usage snapshot: entry %+v; want a node, a GPU index >= 0 and shards >= 0", g)
		}
	}
	return s, nil
}

// Snapshot lists the shards taken on every GPU of the cluster that has any.
func (cl *Cluster) Snapshot(taken time.Time, sizes []int64) Snapshot {
	s := Snapshot{Taken: taken.UTC(), Sizes: sizes, GPUs: []GPUUse{}}
	for _, nd := range cl.State.Nodes {
		for _, dv := range nd.Devices {
			if dv.Used > 0 {
				s.GPUs = append(s.GPUs, GPUUse{Node: nd.Name, GPU: dv.GPU, Shards: dv.Used})
			}
		}
	}
	return s
}

// Take records shards taken on the GPU of node with NVML index gpu. It does not
// reindex the state: call State.Reindex after the last one.
func (cl *Cluster) Take(node string, gpu int, shards int64) error {
	n, ok := cl.node[node]
	if !ok {
		return fmt.Errorf("steer: node %s has no shareable GPU in the inventory", node)
	}
	nd := &cl.State.Nodes[n]
	for i := range nd.Devices {
		if dv := &nd.Devices[i]; dv.GPU == gpu {
			dv.Used = min(dv.Capacity, dv.Used+shards)
			return nil
		}
	}
	return fmt.Errorf("steer: node %s has no shareable GPU with index %d in the inventory", node, gpu)
}

// TakeTyped records shards a job pinned to a typed shard holds: typ is the shard Type
// (shard.TypeName) of one GPU of node.
func (cl *Cluster) TakeTyped(node, typ string, shards int64) error {
	n, ok := cl.node[node]
	if !ok {
		return fmt.Errorf("steer: node %s has no shareable GPU in the inventory", node)
	}
	for _, dv := range cl.State.Nodes[n].Devices {
		if shard.TypeName(dv.Model, dv.GPU) == typ {
			return cl.Take(node, dv.GPU, shards)
		}
	}
	return fmt.Errorf("steer: node %s has no GPU whose shard type is %s", node, typ)
}
