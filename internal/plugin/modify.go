package plugin

import "github.com/gpumem/gpumem/internal/admit"

// Modify decides a change to a pending job (job_modify). in holds only what the change
// sets; cur is the job as slurmctld holds it now, or nil where the shim cannot read it,
// and the change is then decided alone, like a new job. keep says this Slurm refuses to
// change a pending job's GRES name (shard to gpu or back). With cur:
//   - a new gpu:mem is decided for the job's own partitions and shape (and its GRES name
//     when keep), and only the fields that differ from the job's are written back;
//   - a change of partition, features or nodes that leaves the job's GRES alone is
//     refused when that GRES (what gpu:mem became at submit) can never run under it.
//
// Updates are rare and, on 22.05, the user reads only Slurm's error code: every refusal
// is logged for the administrator.
func (p *Plugin) Modify(in Fields, cur *Fields, keep bool) Verdict {
	if cur == nil {
		return p.submit(in) // a change, not a submission: not counted as a refused job
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
