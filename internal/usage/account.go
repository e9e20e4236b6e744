package usage

import (
	"sort"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/internal/slurmcli"
)

// Slice kinds a job's allocation can be, as Slurm hands them out.
const (
	KindShard = "shard" // SLURM_SHARDS_ON_NODE x the shard unit
	KindMIG   = "mig"   // whole MIG instances
	KindGPU   = "gpu"   // whole GPUs
	// KindUnknown is a job Slurm runs here whose allocation could not be read: it is
	// measured and never acted on.
	KindUnknown = "unknown"
)

// Job is what one Slurm job uses on this node's GPUs in one poll.
type Job struct {
	ID    string
	Kind  string
	Alloc uint64 // bytes the job was given on this node
	Used  uint64 // bytes its processes hold, summed over GPUs
	GPUs  []JobGPU
	Meta  slurmcli.Meta // from Slurm's record of the job
}

// JobGPU is one job's share of one GPU.
type JobGPU struct {
	GPU   int
	Used  uint64
	Alloc uint64 // the part of the job's allocation on this GPU
	PIDs  []int
}

// Over reports whether the job holds more GPU memory than it was given; never when
// what it was given is not known.
func (j *Job) Over() bool { return j.Kind != KindUnknown && j.Used > j.Alloc }

// OwnerFunc finds the job of a process; Owners.Owners makes it in production.
type OwnerFunc func(pid int) (Owner, error)

// Account attributes every GPU process of a snapshot to its Slurm job and sums per job
// and GPU. unit is the bytes of one shard. Processes of no job are returned as
// unattributed bytes per GPU index: they are real use (a daemon, a user outside Slurm)
// that no policy may kill.
//
// The allocation is the job's shards x unit when it holds shards; otherwise the
// memory of each MIG instance or whole GPU its processes run on, since Slurm gave it
// that device entirely. Shard sums are compared over the whole node, which is exact for
// Slurm's default of one GPU per job's shards and still right when a site allows
// shards from several GPUs.
func Account(s Snapshot, owner OwnerFunc, unit uint64) (jobs []Job, unattributed map[int]uint64) {
	byID := map[string]*Job{}
	unattributed = map[int]uint64{}
	devAlloc := map[string]map[string]uint64{} // job -> device key -> bytes
	for gi := range s.GPUs {
		g := &s.GPUs[gi]
		for _, p := range g.Procs {
			o, err := owner(p.PID)
			if err != nil || o.JobID == "" {
				unattributed[g.Index] += p.Used
				continue
			}
			j := byID[o.JobID]
			if j == nil {
				j = &Job{ID: o.JobID, Meta: o.Meta}
				byID[o.JobID] = j
				devAlloc[o.JobID] = map[string]uint64{}
			}
			j.Used += p.Used
			addProc(j, g.Index, p)
			switch {
			case o.Unknown:
				j.Kind = KindUnknown
			case j.Kind == KindUnknown:
			case o.Shards > 0:
				j.Kind, j.Alloc = KindShard, uint64(o.Shards)*unit
			case p.GI != NoInstance:
				if in, ok := g.Instance(p.GI); ok {
					devAlloc[o.JobID][strconv.Itoa(g.Index)+"/"+strconv.Itoa(p.GI)] = in.Total
				}
				setKind(j, KindMIG)
			default:
				devAlloc[o.JobID][strconv.Itoa(g.Index)] = g.Total
				setKind(j, KindGPU)
			}
		}
	}
	for id, j := range byID {
		if j.Kind == KindUnknown {
			j.Alloc = 0
		} else if j.Kind == KindShard {
			// Slurm does not say how a multi-GPU shard job's shards split; even is
			// exact for the default of one GPU per job and a fair guess otherwise.
			for i := range j.GPUs {
				j.GPUs[i].Alloc = j.Alloc / uint64(len(j.GPUs))
			}
		} else {
			for key, b := range devAlloc[id] {
				j.Alloc += b
				gpu, _, _ := strings.Cut(key, "/")
				n, _ := strconv.Atoi(gpu)
				for i := range j.GPUs {
					if j.GPUs[i].GPU == n {
						j.GPUs[i].Alloc += b
					}
				}
			}
		}
		jobs = append(jobs, *j)
	}
	sort.Slice(jobs, func(a, b int) bool { return jobLess(jobs[a].ID, jobs[b].ID) })
	return jobs, unattributed
}

func setKind(j *Job, k string) {
	if j.Kind != KindShard && j.Kind != KindUnknown {
		j.Kind = k
	}
}

func addProc(j *Job, gpu int, p Proc) {
	for i := range j.GPUs {
		if j.GPUs[i].GPU == gpu {
			j.GPUs[i].Used += p.Used
			j.GPUs[i].PIDs = append(j.GPUs[i].PIDs, p.PID)
			return
		}
	}
	j.GPUs = append(j.GPUs, JobGPU{GPU: gpu, Used: p.Used, PIDs: []int{p.PID}})
}

// jobLess orders job IDs numerically, so job 9 comes before job 10.
func jobLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
