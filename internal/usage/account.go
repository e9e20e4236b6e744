package usage

import (
	"maps"
	"sort"

	"github.com/gpumem/gpumem/internal/slicekind"
	"github.com/gpumem/gpumem/internal/slurmcli"
)

// Slice kinds a job's allocation can be, as Slurm hands them out; spelled in slicekind.
const (
	KindShard = slicekind.Shard // SLURM_SHARDS_ON_NODE x the shard unit
	KindMIG   = slicekind.MIG   // whole MIG instances
	KindGPU   = slicekind.GPU   // whole GPUs
	// KindUnknown is a job Slurm runs here whose allocation could not be read: it is
	// measured and never acted on.
	KindUnknown = slicekind.Unknown
)

// Job is what one Slurm job uses on this node's GPUs in one poll.
type Job struct {
	ID    string
	Kind  string
	Alloc uint64 // bytes the job was given on this node
	Used  uint64 // bytes its processes hold on what it was given, summed over GPUs
	// Stray is bytes its processes hold on GPUs or MIG instances Slurm did not give
	// it (reachable where ConstrainDevices is off): a violation of its own, never
	// counted against another job.
	Stray uint64
	// UnknownSize counts its processes whose memory NVML did not report (Proc.Unknown):
	// they add nothing to Used and no policy acts on them.
	UnknownSize int
	GPUs        []JobGPU
	Meta        slurmcli.Meta // from Slurm's record of the job
}

// JobGPU is one job's share of one GPU.
type JobGPU struct {
	GPU   int
	Used  uint64
	Stray uint64 // on an instance or GPU Slurm did not give the job
	Alloc uint64 // the part of the job's allocation on this GPU
	PIDs  []int
}

// Over reports whether the job holds more GPU memory than it was given, or any on a
// device it was not given; never when what it was given is not known.
func (j *Job) Over() bool { return j.Kind != KindUnknown && (j.Used > j.Alloc || j.Stray > 0) }

// Holds reports whether the job's processes hold any GPU memory: on what it was given,
// elsewhere, or of a size NVML did not report (which may be any).
func (j *Job) Holds() bool { return j.Used > 0 || j.Stray > 0 || j.UnknownSize > 0 }

// OwnerFunc finds the job of a process; Owners.Owners makes it in production.
type OwnerFunc func(pid int) (Owner, error)

// Orphan is a GPU process left by a job Slurm says has ended.
type Orphan struct {
	GPU, PID int
	Job      string
	Used     uint64 // 0 when Unknown
	Unknown  bool
}

// Accounting is one poll's processes, attributed.
type Accounting struct {
	Jobs []Job
	// Unattributed is bytes per GPU index of processes of no job: real use (a daemon,
	// a user outside Slurm) that no policy may kill.
	Unattributed map[int]uint64
	// Orphaned is bytes per GPU index of processes whose job has ended; Orphans names
	// them. No policy acts on them.
	Orphaned map[int]uint64
	Orphans  []Orphan
	// UnknownProcs are the processes whose memory NVML did not report, of any owner.
	UnknownProcs []GPUProc
}

// GPUProc names one process on one GPU.
type GPUProc struct{ GPU, PID int }

// Account is Measure's jobs, and its unattributed and orphaned bytes together: use
// that is no job's.
func Account(s Snapshot, owner OwnerFunc, unit uint64) (jobs []Job, noJob map[int]uint64) {
	a := Measure(s, owner, unit)
	return a.Jobs, a.NoJob()
}

// NoJob is the bytes per GPU index that are no running job's: unattributed and
// orphaned.
func (a Accounting) NoJob() map[int]uint64 {
	out := maps.Clone(a.Unattributed)
	for g, b := range a.Orphaned {
		out[g] += b
	}
	return out
}

// device is one gpu GRES record of a node: a whole GPU (GI NoInstance) or one MIG
// instance of it.
type device struct{ gpu, gi int }

// Measure attributes every GPU process of a snapshot to its Slurm job and sums per job
// and GPU. unit is the bytes of one shard.
//
// A shard job's allocation is its shards x unit, compared over the whole node, which
// is exact for Slurm's default of one GPU per job's shards and still right when a site
// allows shards from several GPUs. A whole-GPU or MIG job's allocation is the devices
// Slurm gave it (Owner.GPUs, gres.conf order), whichever its processes touch; what they
// hold on any other device is Stray. When Slurm said how many devices but not which
// (squeue), the first that many devices its processes touch are taken as its own.
func Measure(s Snapshot, owner OwnerFunc, unit uint64) Accounting {
	a := Accounting{Unattributed: map[int]uint64{}, Orphaned: map[int]uint64{}}
	byID := map[string]*Job{}
	owners := map[string]Owner{}
	recs, exact := records(s)
	touched := map[string][]device{} // job -> devices in the order first touched
	for gi := range s.GPUs {
		g := &s.GPUs[gi]
		for _, p := range g.Procs {
			used, known := p.Used, !p.Unknown
			if p.Used > g.Total {
				used, known = 0, false
			}
			if !known {
				a.UnknownProcs = append(a.UnknownProcs, GPUProc{GPU: g.Index, PID: p.PID})
				used = 0
			}
			o, err := owner(p.PID)
			if err != nil || o.JobID == "" {
				a.Unattributed[g.Index] += used
				continue
			}
			if o.Ended {
				a.Orphaned[g.Index] += used
				a.Orphans = append(a.Orphans, Orphan{GPU: g.Index, PID: p.PID, Job: o.JobID, Used: used, Unknown: !known})
				continue
			}
			j := byID[o.JobID]
			if j == nil {
				j = &Job{ID: o.JobID, Meta: o.Meta}
				byID[o.JobID] = j
				owners[o.JobID] = o
			}
			if !known {
				j.UnknownSize++
			}
			jg := jobGPU(j, g.Index)
			jg.PIDs = append(jg.PIDs, p.PID)
			dv := device{g.Index, NoInstance}
			if p.GI != NoInstance {
				dv.gi = p.GI
			}
			switch {
			case o.Unknown:
				j.Kind = KindUnknown
			case j.Kind == KindUnknown:
			case o.Shards > 0:
				j.Kind, j.Alloc = KindShard, uint64(o.Shards)*unit
			default:
				if !contains(touched[o.JobID], dv) {
					touched[o.JobID] = append(touched[o.JobID], dv)
				}
			}
			if j.Kind == KindShard || j.Kind == KindUnknown {
				jg.Used += used
				j.Used += used
				continue
			}
			if given(o, recs, exact, touched[o.JobID], dv) {
				jg.Used += used
				j.Used += used
			} else {
				jg.Stray += used
				j.Stray += used
			}
		}
	}
	for id, j := range byID {
		switch j.Kind {
		case KindUnknown:
			j.Alloc = 0
		case KindShard:
			// Slurm does not say how a multi-GPU shard job's shards split; even is
			// exact for the default of one GPU per job and a fair guess otherwise.
			for i := range j.GPUs {
				j.GPUs[i].Alloc = j.Alloc / uint64(len(j.GPUs))
			}
		default:
			allocate(j, owners[id], s, recs, exact, touched[id])
		}
		a.Jobs = append(a.Jobs, *j)
	}
	sort.Slice(a.Jobs, func(x, y int) bool { return slurmcli.IDLess(a.Jobs[x].ID, a.Jobs[y].ID) })
	return a
}

// records numbers the node's gpu GRES records as gres.conf lists them: GPUs by index,
// a MIG GPU as one record per instance by placement. exact is false when a GPU's
// instances could not be read, so the numbering past it cannot be trusted.
func records(s Snapshot) (recs []device, exact bool) {
	gpus := append([]GPU(nil), s.GPUs...)
	sort.Slice(gpus, func(a, b int) bool { return gpus[a].Index < gpus[b].Index })
	exact = true
	for _, g := range gpus {
		if !g.MIG {
			recs = append(recs, device{g.Index, NoInstance})
			continue
		}
		if len(g.Instances) == 0 {
			exact = false
		}
		ins := append([]Instance(nil), g.Instances...)
		sort.SliceStable(ins, func(a, b int) bool { return ins[a].Start < ins[b].Start })
		for _, in := range ins {
			recs = append(recs, device{g.Index, in.GI})
		}
	}
	return recs, exact
}

// mine lists the devices a job was given, when Slurm said which and the numbering is
// sound; ok is false otherwise (only a count can be used).
func mine(o Owner, recs []device, exact bool) (devs []device, ok bool) {
	if o.GPUs == nil || !exact {
		return nil, false
	}
	for _, i := range o.GPUs {
		if i >= 0 && i < len(recs) {
			devs = append(devs, recs[i])
		}
	}
	return devs, true
}

// given reports whether dv is the job's: one Slurm gave it, or, where Slurm gave only a
// count, one of the first that many it touched.
func given(o Owner, recs []device, exact bool, touched []device, dv device) bool {
	if devs, ok := mine(o, recs, exact); ok {
		return contains(devs, dv)
	}
	for i, t := range touched {
		if t == dv {
			return i < o.GPUCount
		}
	}
	return false
}

// allocate sets a whole-GPU or MIG job's allocation: the memory of every device it was
// given, touched or not.
func allocate(j *Job, o Owner, s Snapshot, recs []device, exact bool, touched []device) {
	devs, ok := mine(o, recs, exact)
	if !ok {
		devs = touched[:min(len(touched), o.GPUCount)]
	}
	j.Kind = KindGPU
	for _, dv := range devs {
		size := deviceSize(s, dv)
		if dv.gi != NoInstance {
			j.Kind = KindMIG
		}
		j.Alloc += size
		if size > 0 {
			jobGPU(j, dv.gpu).Alloc += size
		}
	}
	if len(devs) == 0 && len(touched) > 0 && touched[0].gi != NoInstance {
		j.Kind = KindMIG
	}
	// A GPU given but untouched carries its allocation with no use: keep GPUs ordered.
	sort.SliceStable(j.GPUs, func(a, b int) bool { return j.GPUs[a].GPU < j.GPUs[b].GPU })
}

func deviceSize(s Snapshot, dv device) uint64 {
	for i := range s.GPUs {
		g := &s.GPUs[i]
		if g.Index != dv.gpu {
			continue
		}
		if dv.gi == NoInstance {
			return g.Total
		}
		if in, ok := g.Instance(dv.gi); ok {
			return in.Total
		}
	}
	return 0
}

func contains(devs []device, dv device) bool {
	for _, d := range devs {
		if d == dv {
			return true
		}
	}
	return false
}

// jobGPU is the job's entry for a GPU, added when it has none.
func jobGPU(j *Job, gpu int) *JobGPU {
	for i := range j.GPUs {
		if j.GPUs[i].GPU == gpu {
			return &j.GPUs[i]
		}
	}
	j.GPUs = append(j.GPUs, JobGPU{GPU: gpu})
	return &j.GPUs[len(j.GPUs)-1]
}
