package plugin

import (
	"github.com/gpumem/gpumem/internal/admit"
	"github.com/gpumem/gpumem/internal/refusal"
)

// Unread says why job_modify could not read the job a change is for.
type Unread int

const (
	// Read: the job was read (cur is set).
	Read Unread = iota
	// NoLayout: this build of the plugin does not know where this Slurm release keeps a
	// job's fields (cgo/include/gpumem_jobrec.h has no entry for it).
	NoLayout
	// NotOneJob: the change names no single plain job id (an array task, a
	// heterogeneous job's component, a list of jobs, a job name).
	NotOneJob
	// NotARecord: the record did not pass the checks (its magic numbers, its job id).
	NotARecord
)

// Modify decides a change to a pending job (job_modify). in holds only what the change
// sets; cur is the job as slurmctld holds it now, or nil where the shim cannot read it
// (why says why). keep says this Slurm refuses to change a pending job's GRES name
// (shard to gpu or back).
//
// Without cur a new gpu:mem is refused: decided alone, like a new job, it could be given
// a form the job's partitions never serve or, where keep, a GRES name Slurm then refuses
// with its own error. A change of partition, features or nodes alone is Slurm's to judge:
// gpumem cannot tell whether the job holds what gpu:mem became. With cur:
//   - a new gpu:mem is decided for the job's own partitions and shape (and its GRES name
//     when keep), and only the fields that differ from the job's are written back;
//   - a change of partition, features or nodes that leaves the job's GRES alone is
//     refused when that GRES (what gpu:mem became at submit) can never run under it.
//
// Updates are rare and, on 22.05, the user reads only Slurm's error code: every refusal
// is logged for the administrator.
func (p *Plugin) Modify(in Fields, cur *Fields, keep bool, why Unread) Verdict {
	if cur == nil {
		v := Verdict{Fields: in}
		if AsksMem(in) {
			// A change, not a submission: not counted as a refused job.
			v.Refusal = why.refusal()
			p.log.infof("job_modify refused (%+v, job not read: %s): %s", in, why, v.Refusal)
		}
		return v
	}
	job := *cur
	gres := false
	for _, f := range []struct {
		dst *string
		v   string
		tre bool
	}{
		{&job.PerNode, in.PerNode, true}, {&job.PerJob, in.PerJob, true}, {&job.PerSocket, in.PerSocket, true},
		{&job.PerTask, in.PerTask, true}, {&job.Partition, in.Partition, false}, {&job.Features, in.Features, false},
		{&job.ReqNodes, in.ReqNodes, false}, {&job.ExcNodes, in.ExcNodes, false},
	} {
		if f.v != "" {
			*f.dst = f.v
			gres = gres || f.tre
		}
	}
	if in.MinNodes != 0 {
		job.MinNodes = in.MinNodes
	}
	st := p.current(true)
	var v Verdict
	switch {
	case AsksMem(in):
		if keep {
			job.Keep = join(cur.PerNode, cur.PerJob)
		}
		v, _ = p.decide(st, job, nil, false)
		if v.Refusal == "" {
			out := in
			for _, f := range []struct {
				dst        *string
				was, after string
			}{
				{&out.PerNode, job.PerNode, v.Fields.PerNode}, {&out.PerJob, job.PerJob, v.Fields.PerJob},
				{&out.PerSocket, job.PerSocket, v.Fields.PerSocket}, {&out.PerTask, job.PerTask, v.Fields.PerTask},
				{&out.Partition, job.Partition, v.Fields.Partition},
			} {
				if f.after != f.was {
					*f.dst = f.after
				}
			}
			v.Fields = out
		}
	case !gres && st.core != nil:
		v = Verdict{Fields: in}
		if h, ok := st.core.(interface{ Holds(admit.Job) error }); ok {
			if err := h.Holds(jobOf(job)); err != nil {
				v.Refusal = err.Error()
			}
		}
	default:
		v = Verdict{Fields: in}
	}
	v.Fresh = 0
	if v.Refusal != "" {
		p.log.infof("job_modify refused (%+v on %+v): %s", in, *cur, v.Refusal)
	}
	return v
}

func (u Unread) String() string {
	switch u {
	case Read:
		return "read"
	case NoLayout:
		return "this build of job_submit_gpumem.so has no layout of this Slurm release's job records; rebuild it with cgo/build.sh and SLURM_SOURCE set to the release's source tree"
	case NotOneJob:
		return "the update names no single plain job id"
	default:
		return "the job record failed its checks (magic number, job id)"
	}
}

// refusal is what a user reads when a new gpu:mem cannot be checked against the job
// it changes, for this reason.
func (u Unread) refusal() string {
	switch u {
	case NotOneJob:
		return refusal.ChangeNotOneJob()
	case NoLayout:
		return refusal.ChangeNoLayout()
	default:
		return refusal.ChangeUnread()
	}
}
