package admit

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/slurmconf"
)

// unit is one kind of device a node offers whole to a job: a MIG profile or a full-GPU
// type, with how many of it the node has.
type unit struct {
	kind    placement.Kind // MIG or Whole
	name    string         // MIG profile or Slurm GPU type
	product string         // NVML product name, for messages
	mib     int64          // the smallest of them on the node
	count   int
	gpus    []int // NVML index of each one's GPU, to take out what a usage view says is busy
}

// config is what admission needs to know about the GPUs of a node. Nodes alike share one,
// so that a decision costs the number of distinct node shapes, not the number of nodes.
type config struct {
	key       string
	shards    []int64 // shards of each shared GPU
	shardGPU  []int   // NVML index of each shared GPU
	units     []unit
	largest   int64 // memory of the largest physical GPU
	largestBy string

	shardFence []string // each shared GPU's fence (inventory.GPU.FenceOf), for Fence policies
}

// group is the nodes of one config and one feature set.
type group struct {
	cfg      *config
	features []string
	nodes    []string
}

// member is a group's share of one partition: how many of its nodes are in it.
type member struct {
	g *group
	n int
}

// partition is a partition's GPU nodes, computed once at New.
type partition struct {
	name      string
	members   []member
	nodes     map[string]bool
	shardMiB  int64 // the most one job's shards can hold on one GPU (0: no shared GPU)
	largest   int64 // memory of the largest physical GPU
	largestBy string
}

// nodeRef is where a node is found: its group.
type nodeRef struct{ g *group }

// index is the cluster as admission reads it.
type index struct {
	parts map[string]*partition
	nodes map[string]nodeRef
	hosts *slurmconf.NodeSet // the nodes' names, which a job's host lists are read against
}

// indexOf groups the cluster's nodes by GPU config and features, and lists each
// partition's share of every group. A node in no partition can run no job, so it is left
// out of the partitions (and still known by name, for messages).
func indexOf(c inventory.Cluster, unitMiB int64) index {
	ix := index{parts: map[string]*partition{}, nodes: map[string]nodeRef{}}
	cfgs := map[string]*config{}
	groups := map[string]*group{}
	for _, n := range c.Nodes {
		cfg := configOf(n, unitMiB)
		if have := cfgs[cfg.key]; have != nil {
			cfg = have
		} else {
			cfgs[cfg.key] = cfg
		}
		feats := append([]string(nil), n.Features...)
		sort.Strings(feats)
		gk := cfg.key + "|" + strings.Join(feats, ",")
		g := groups[gk]
		if g == nil {
			g = &group{cfg: cfg, features: feats}
			groups[gk] = g
		}
		g.nodes = append(g.nodes, n.Name)
		ix.nodes[n.Name] = nodeRef{g: g}
		for _, name := range n.Partitions {
			p := ix.parts[name]
			if p == nil {
				p = &partition{name: name, nodes: map[string]bool{}}
				ix.parts[name] = p
			}
			if p.nodes[n.Name] {
				continue
			}
			p.nodes[n.Name] = true
			p.add(g)
		}
	}
	names := make([]string, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		names = append(names, n.Name)
	}
	ix.hosts = slurmconf.NewNodeSet(names)
	return ix
}

func (p *partition) add(g *group) {
	for i := range p.members {
		if p.members[i].g == g {
			p.members[i].n++
			return
		}
	}
	p.members = append(p.members, member{g: g, n: 1})
	c := g.cfg
	if c.largest > p.largest || c.largest == p.largest && c.largestBy < p.largestBy {
		p.largest, p.largestBy = c.largest, c.largestBy
	}
	for _, s := range c.shards {
		p.shardMiB = max(p.shardMiB, s)
	}
}

func configOf(n inventory.Node, unitMiB int64) *config {
	c := &config{}
	var key strings.Builder
	add := func(k placement.Kind, name, product string, mib int64, gpu int) {
		for i := range c.units {
			if u := &c.units[i]; u.kind == k && u.name == name {
				u.count++
				u.mib = min(u.mib, mib)
				u.gpus = append(u.gpus, gpu)
				return
			}
		}
		c.units = append(c.units, unit{kind: k, name: name, product: product, mib: mib, count: 1, gpus: []int{gpu}})
	}
	for _, g := range n.GPUs {
		if g.MemoryMiB > c.largest || g.MemoryMiB == c.largest && g.Name < c.largestBy {
			c.largest, c.largestBy = g.MemoryMiB, g.Name
		}
		key.WriteString(g.Type + "/" + g.Name + "/")
		if g.MIG {
			key.WriteString("mig")
			for _, in := range g.Instances {
				add(placement.MIG, in.Profile, g.Name, in.MemoryMiB, g.Index)
				key.WriteString(":" + in.Profile + "=" + itoa(in.MemoryMiB))
			}
			key.WriteString(";")
			continue
		}
		add(placement.Whole, g.Type, g.Name, g.MemoryMiB, g.Index)
		key.WriteString(itoa(g.MemoryMiB))
		if g.Shared() {
			c.shards = append(c.shards, shard.PerGPU(g.MemoryMiB, unitMiB)*unitMiB)
			c.shardGPU = append(c.shardGPU, g.Index)
			c.shardFence = append(c.shardFence, g.FenceOf())
			key.WriteString("/shared/" + g.FenceOf())
		}
		key.WriteString(";")
	}
	sort.SliceStable(c.units, func(i, j int) bool {
		if c.units[i].mib != c.units[j].mib {
			return c.units[i].mib < c.units[j].mib
		}
		return c.units[i].name < c.units[j].name
	})
	// Two nodes share a config only when their GPUs sit at the same indexes too, since a
	// usage view names GPUs by index.
	for _, g := range n.GPUs {
		key.WriteString("#" + itoa(int64(g.Index)))
	}
	c.key = key.String()
	return c
}

// find returns the node's unit of kind k named name, or nil.
func (c *config) find(k placement.Kind, name string) *unit {
	for i := range c.units {
		if c.units[i].kind == k && c.units[i].name == name {
			return &c.units[i]
		}
	}
	return nil
}

// hasFeatures says whether the sorted feature list holds f.
func hasFeature(list []string, f string) bool {
	_, ok := slices.BinarySearch(list, f)
	return ok
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
