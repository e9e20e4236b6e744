// Package admit turns a GPU-memory request into what Slurm understands: it decides whether
// the request can ever fit the partitions the job may use, which kind of slice serves it
// (shards of a shared GPU, a MIG instance, whole GPUs), and rewrites the job's TRES
// strings into native GRES (shard:20, gpu:3g.40gb:1, gpu:h100:2). Pure Go, no I/O: it runs
// inside slurmctld on every submission.
package admit

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/inventory"
	"github.com/gpumem/gpumem/internal/placement"
	"github.com/gpumem/gpumem/internal/request"
	"github.com/gpumem/gpumem/internal/shard"
	"github.com/gpumem/gpumem/internal/units"
)

// Pool routes requests by size when a job names no partition: a request of per-GPU memory
// in [MinMiB, MaxMiB] goes to Partition (MaxMiB 0: no upper bound). Pools are tried in
// order; every pool that matches is offered to Slurm, so small slices land where they are
// meant to and big requests keep the partitions that can hold them.
type Pool struct {
	Partition      string
	MinMiB, MaxMiB int64
}

// Options tune admission. The zero value is usable.
type Options struct {
	ShardUnitMiB    int64  // GPU memory per Slurm shard; 0 means shard.DefaultUnitMiB
	PreferMIG       bool   // try a MIG instance before shards when both hold the request
	PlacementPolicy string // placement policy for Check; "" means first-fit
	// TargetSizesMiB are the per-GPU request sizes the fragmentation-aware policies (fgd,
	// gpumem) keep room for; empty means DefaultTargetSizesMiB.
	TargetSizesMiB []int64
	Pools          []Pool
	Fence          string // FenceOff (""), FencePrefer or FenceRequire: see fence.go
}

// Job is the part of a job_desc admission reads and may rewrite: the GRES strings and
// partitions, and the rest of the request's shape, which only narrows where it may run.
// The zero value of a shape field leaves it open.
type Job struct {
	TresPerNode, TresPerJob, TresPerSocket, TresPerTask string
	Partitions                                          []string // empty: the default partitions

	ReqNodes, ExcNodes string // host lists of --nodelist and --exclude
	Features           string // --constraint
	MinNodes           uint32 // --nodes (the least)
	Array              string // --array, e.g. "0-49%10"
	// HetJob marks one component of a heterogeneous job. Components are decided alone,
	// each by what runs most of it at once; only HetSiblings ties them together.
	HetJob bool
	// HetSiblings are the Hosts of the components of the same heterogeneous job decided
	// before this one, one list per node each takes.
	HetSiblings [][]string
	// Tasks is how many tasks the job runs (--ntasks, or --ntasks-per-node times
	// --nodes; 0: one per node), which --gpus-per-task multiplies.
	Tasks uint32
	// GPUsOnly names, space-separated, the user's options that count GPUs as Slurm
	// counts them: --exclusive, --mem-per-gpu, --cpus-per-gpu, --ntasks-per-gpu ("":
	// none). Slurm counts a shard as no GPU, so a shard job with these is refused
	// ("mem_per_tres ... did not request any GPU", "Invalid generic resource") or, with
	// --exclusive on 22.05, pends for ever; such a job gets a MIG instance or whole GPUs.
	GPUsOnly string
	// Keep is, for a change to a pending job on a Slurm that refuses a change of GRES name
	// (22.05: shard to gpu or back), the native GRES the job holds: only forms of the same
	// name are chosen.
	Keep string
}

// Decision is the job as it should be submitted.
type Decision struct {
	Job                    // rewritten; equal to the input when Changed is false
	Changed bool           // something was rewritten
	Kind    placement.Kind // the slice kind chosen; 0 when Changed is false
	GRES    string         // the native GRES written, e.g. "shard:20"
	MiB     int64          // memory asked per GPU
	GPUs    int64          // GPUs asked (per node, or per job when PerJob)
	PerJob  bool           // the GPU count is for the whole job (--gpus)
	Units   int64          // MiB each GPU is charged in placement: whole shards for Shard
	Model   string         // GPU type for Whole, MIG profile for MIG; "" for Shard
	Serving []string       // the partitions that can serve it
	Explain string         // one log line
	// Live says the choice rested on the usage view: the same job may be translated
	// differently once the view changes, so the decision must not be reused.
	Live bool
}

// Admitter admits jobs against one inventory; build a new one when the inventory changes.
// It is safe for concurrent use: Admit only reads, and Check makes its own policy, since
// some policies (random, gpu-packing, fgd, gpumem) keep state between choices.
type Admitter struct {
	opt      Options
	defaults []string
	ix       index
	names    []string // every partition, sorted, for messages
	shapes   []placement.Shape
	twins    fenceTwins
}

// DefaultTargetSizesMiB are typical inference and training slices: 5, 10, 20, 40 GiB.
var DefaultTargetSizesMiB = []int64{5 << 10, 10 << 10, 20 << 10, 40 << 10}

// New indexes c for admission. defaultPartitions are used for jobs that name none; when
// empty, such jobs may use every partition of c.
func New(c inventory.Cluster, defaultPartitions []string, o Options) (*Admitter, error) {
	unit, err := shard.Unit(o.ShardUnitMiB)
	if err != nil {
		return nil, fmt.Errorf("admit: %w", err)
	}
	o.ShardUnitMiB = unit
	if o.PlacementPolicy == "" {
		o.PlacementPolicy = "first-fit"
	}
	if len(o.TargetSizesMiB) == 0 {
		o.TargetSizesMiB = DefaultTargetSizesMiB
	}
	shapes, err := placement.ShapesOfSizes(o.TargetSizesMiB)
	if err != nil {
		return nil, fmt.Errorf("admit: %w", err)
	}
	// Made once here only to refuse an unknown name at start, not at the first Check.
	if _, err := placement.ByName(o.PlacementPolicy, 1, shapes...); err != nil {
		return nil, fmt.Errorf("admit: %w", err)
	}
	a := &Admitter{opt: o, ix: indexOf(c, o.ShardUnitMiB), shapes: shapes}
	for name := range a.ix.parts {
		a.names = append(a.names, name)
	}
	sort.Strings(a.names)
	a.defaults = append([]string(nil), defaultPartitions...)
	if len(a.defaults) == 0 {
		a.defaults = a.names
	}
	if err := a.initFence(); err != nil {
		return nil, err
	}
	for _, p := range o.Pools {
		if a.ix.parts[p.Partition] == nil {
			return nil, fmt.Errorf("admit: pool partition %q has no GPU node in the inventory; known: %s", p.Partition, strings.Join(a.names, ", "))
		}
		if p.MinMiB < 0 || p.MaxMiB < 0 || (p.MaxMiB != 0 && p.MaxMiB < p.MinMiB) {
			return nil, fmt.Errorf("admit: pool %s: range %d..%d MiB; want 0 <= min <= max (max 0: no bound)", p.Partition, p.MinMiB, p.MaxMiB)
		}
	}
	return a, nil
}

// Admit decides one job as if every device were free. Jobs without gpu:mem come back
// unchanged. An error is a refusal whose text is written for the user.
func (a *Admitter) Admit(j Job) (Decision, error) { return a.AdmitWith(j, nil) }

// AdmitWith is Admit with a usage view (nil: none): among the forms that can serve the
// job, the one with room now is chosen.
func (a *Admitter) AdmitWith(j Job, use *Usage) (Decision, error) {
	if !mentionsMem(j) {
		return Decision{Job: j}, nil
	}
	var q ask
	found, err := readAsk(j, &q)
	if err != nil {
		return Decision{}, err
	}
	if !found {
		return Decision{Job: j}, nil
	}
	sh, err := a.shapeOf(&j)
	if err != nil {
		return Decision{}, err
	}
	cands, routed := a.candidates(j, q.mib)
	d := Decision{Job: j, Changed: true, MiB: q.mib, GPUs: q.gpus, PerJob: q.perJob}
	if err := a.choose(&q, &sh, cands, use, &d); err != nil {
		return Decision{}, noFit{err}
	}
	d.rewrite(&q)
	if routed || len(d.Serving) != len(cands) {
		d.Partitions = d.Serving
	}
	return d, nil
}

// ErrNoFit is what errors.Is finds in a refusal of a request gpumem read but no GPU the
// job may use can hold; every other refusal is of a request it could not read or
// accept as written. Monitoring counts the two apart.
var ErrNoFit = errors.New("no GPU the job may use can hold the request")

// noFit is a refusal by choose: its text, for the user, is the error it wraps.
type noFit struct{ error }

func (e noFit) Is(target error) bool { return target == ErrNoFit }
func (e noFit) Unwrap() error        { return e.error }

// explain is the log line of decision d, whose slice gets fence ("" under Fence = off),
// built in one buffer: it is made for every job.
func explain(q *ask, d *Decision, fence string) string {
	b := make([]byte, 0, 128)
	b = append(b, "gpu:mem:"...)
	b = units.AppendSize(b, q.mib)
	b = append(b, " x"...)
	b = strconv.AppendInt(b, q.gpus, 10)
	if q.perJob {
		b = append(b, " per job -> "...)
	} else {
		b = append(b, " per node -> "...)
	}
	b = append(b, d.GRES...)
	b = append(b, " in "...)
	for i, p := range d.Serving {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	if fence != "" {
		b = append(b, "; fence "...)
		b = append(b, fence...)
	}
	return string(b)
}

// candidates is the partitions the job may use, narrowed by the pools when it named none;
// routed reports that the pools chose them.
func (a *Admitter) candidates(j Job, mib int64) ([]string, bool) {
	if len(j.Partitions) > 0 {
		return j.Partitions, false
	}
	var routed []string
	for _, p := range a.opt.Pools {
		if mib >= p.MinMiB && (p.MaxMiB == 0 || mib <= p.MaxMiB) {
			routed = append(routed, p.Partition)
		}
	}
	if len(routed) > 0 {
		return routed, true
	}
	return a.defaults, false
}

// rewrite drops the gpu:mem entry and the GPU count it used, and writes the native GRES
// chosen (d.GRES) into the field Slurm reads it from, with the prefix the job already uses.
func (d *Decision) rewrite(q *ask) {
	mem, both := [3]bool{request.GPUMem: true}, [3]bool{request.GPUMem: true, request.GPUCount: true}
	if q.perTask > 0 {
		d.TresPerNode = q.fields[0].Rewrite(mem, "", "")
		d.TresPerJob = q.fields[1].Rewrite(mem, "", "")
		prefix := q.fields[3].Prefix() // --tres-per-task's own, where it gave the count
		if prefix == "" {
			prefix = q.prefix
		}
		d.TresPerTask = q.fields[3].Rewrite(both, d.GRES, prefix)
		return
	}
	if d.Kind == placement.Shard || !q.perJob {
		d.TresPerNode = q.fields[0].Rewrite(both, d.GRES, q.prefix)
		d.TresPerJob = q.fields[1].Rewrite(both, "", "")
		return
	}
	d.TresPerNode = q.fields[0].Rewrite(mem, "", "")
	d.TresPerJob = q.fields[1].Rewrite(both, d.GRES, q.prefix)
}
