package usage

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/gpumem/gpumem/internal/slurmcli"
)

// Owners attributes GPU processes to Slurm jobs with what Slurm itself knows, never
// with anything a process can set about itself (its environment, its cgroup path
// under a user's own delegated tree, its command line):
//
//   - which job a process runs in: `scontrol listpids * NODE`, the processes
//     slurmstepd tracks for each step on this node (proctrack), asked in a poll that
//     sees a GPU process (PID and start time) it has not asked about;
//   - the job's user and what it was given on this node: `scontrol -d show job ID`
//     (JSON where scontrol has it: shards per GPU, and the gpu GRES indices of its
//     whole GPUs and MIG instances), or squeue's id|uid|state|GRES when that record
//     cannot be trusted (counts per node only); asked once for each job that appears
//     on the GPUs, and kept while it is there;
//   - whether the job still runs: squeue's jobs on this node, at most every Recheck,
//     so that what a job leaves behind once Slurm says it ended is orphaned, not its;
//   - the process's real uid from /proc/PID/status (kernel-written), which must be the
//     job's user, so a root or other-user helper inside a job's process tree is not the
//     job's to answer for.
//
// A process none of this vouches for is nobody's: it counts as unattributed, and no
// policy ever acts on it.
type Owners struct {
	Node string // this node's Slurm NodeName
	// Scontrol and Squeue are Slurm's commands; Squeue reads a job whose scontrol
	// record cannot be trusted (text a line break split, on a Slurm without --json).
	Scontrol, Squeue slurmcli.Runner
	Proc             string       // proc filesystem root; "/proc" when empty
	Log              *slog.Logger // nil logs nothing
	// RetryAfter is how long a job whose record could not be read waits before it is
	// asked about again; one minute when zero.
	RetryAfter time.Duration
	// Recheck is how often squeue is asked which jobs still hold their allocation
	// here, so that the processes a job leaves behind stop counting as its use once
	// Slurm says it ended; 30 seconds when zero. One call a node, no free text.
	Recheck time.Duration

	// Failures counts failed questions to Slurm; Unreadable the jobs whose record could
	// not be read (their allocation is unknown and no policy acts on them).
	Failures, Unreadable uint64
	// Orphans counts the processes found left by ended jobs, UnknownSizes those whose
	// memory NVML did not report, Strays the jobs found holding memory on a GPU Slurm
	// did not give them; each once (Report).
	Orphans, UnknownSizes, Strays uint64

	jobs    slurmcli.JobReader
	known   map[string]jobRecord // job id -> what Slurm said; only jobs seen on the GPUs
	procs   map[int]procJob      // GPU process -> its job ("" for none), from the last listpids
	lastErr string
	logged  map[string]bool // one log line per job and problem
	checked time.Time       // when squeue last said which jobs hold their allocation
}

// jobRecord is what Slurm said about one job on this node.
type jobRecord struct {
	uid     int
	shards  int
	meta    slurmcli.Meta
	gpus    []int // gpu GRES indices on this node; nil when Slurm did not say which
	nGPUs   int
	unknown bool      // the record could not be read
	ended   bool      // Slurm says the job no longer runs
	askedAt time.Time // when unknown: when it was last asked
}

// procJob is what listpids said of one process, the process named by its start time.
type procJob struct {
	start uint64
	job   string
}

// Poll is what one round of questions learnt.
type Poll struct {
	Err error // the listpids or show job call that failed, if one did
}

// Owners returns the owner of each GPU process of s for Account.
func (o *Owners) Owners(ctx context.Context, s Snapshot, now time.Time) (OwnerFunc, Poll) {
	if o.known == nil {
		o.known, o.logged, o.procs = map[string]jobRecord{}, map[string]bool{}, map[int]procJob{}
		o.jobs.Scontrol, o.jobs.Squeue = o.Scontrol, o.Squeue
	}
	var pids []int
	for _, g := range s.GPUs {
		for _, p := range g.Procs {
			pids = append(pids, p.PID)
		}
	}
	result := map[int]Owner{}
	nobody := func(pid int) (Owner, error) {
		if ow, ok := result[pid]; ok {
			return ow, nil
		}
		return Owner{}, fmt.Errorf("process %d: in no Slurm job on this node", pid)
	}
	if len(pids) == 0 {
		clear(o.known)
		clear(o.procs)
		return nobody, Poll{}
	}
	byPID, err := o.jobsOf(ctx, pids)
	if err != nil {
		return nobody, Poll{Err: err}
	}
	var poll Poll
	seen := map[string]bool{}
	for _, pid := range pids {
		job := byPID[pid]
		if job == "" {
			continue
		}
		seen[job] = true
		rec, err := o.record(ctx, job, now)
		if err != nil && poll.Err == nil {
			poll.Err = err
		}
		if rec.uid >= 0 {
			uid, err := processUID(o.proc(), pid)
			if err != nil || uid != rec.uid {
				o.once(slog.LevelWarn, fmt.Sprintf("uid %d %d", pid, uid), "a process Slurm lists in a job runs as another user; it is not counted as the job's",
					"job", job, "pid", pid, "process_uid", uid, "job_uid", rec.uid)
				continue
			}
		}
		result[pid] = Owner{JobID: job, Shards: rec.shards, Unknown: rec.unknown, Meta: rec.meta, GPUs: rec.gpus, GPUCount: rec.nGPUs, Ended: rec.ended}
	}
	for id := range o.known {
		if !seen[id] {
			delete(o.known, id)
		}
	}
	if err := o.recheck(ctx, now, result); err != nil && poll.Err == nil {
		poll.Err = err
	}
	return nobody, poll
}

// recheck marks the jobs Slurm no longer runs as ended, at most every Recheck: their
// processes are orphans from then on. A job squeue lists as COMPLETING has ended too;
// Slurm is only cleaning up after it.
func (o *Owners) recheck(ctx context.Context, now time.Time, result map[int]Owner) error {
	every := o.Recheck
	if every <= 0 {
		every = 30 * time.Second
	}
	if len(result) == 0 || (!o.checked.IsZero() && now.Sub(o.checked) < every) {
		return nil
	}
	holding, err := o.jobs.Holding(ctx, o.Node)
	if err != nil {
		o.fail(err)
		return err
	}
	o.checked = now
	for id, rec := range o.known {
		if st := holding[id]; !rec.ended && st != "RUNNING" && st != "SUSPENDED" {
			rec.ended = true
			o.known[id] = rec
			o.once(slog.LevelWarn, "ended "+id, "a job Slurm says has ended left processes on the GPUs; they are orphans, not its use", "job", id, "state", st)
		}
	}
	for pid, ow := range result {
		if o.known[ow.JobID].ended {
			ow.Ended = true
			result[pid] = ow
		}
	}
	return nil
}

// Confirm asks Slurm again, at the moment of acting, which of pids still run in job,
// as the job's user.
func (o *Owners) Confirm(ctx context.Context, job string, pids []int) (map[int]bool, error) {
	byPID, err := o.listPids(ctx, job)
	if err != nil {
		return nil, err
	}
	rec, ok := o.known[job]
	if !ok || rec.unknown {
		return nil, fmt.Errorf("job %s: its user is not known", job)
	}
	if rec.ended {
		return nil, fmt.Errorf("job %s: Slurm says it has ended", job)
	}
	ok2 := map[int]bool{}
	for _, pid := range pids {
		if byPID[pid] != job {
			continue
		}
		if uid, err := processUID(o.proc(), pid); err == nil && uid == rec.uid {
			ok2[pid] = true
		}
	}
	return ok2, nil
}

// jobsOf returns the job of each of pids ("" for none). Slurm is asked only when one
// of them is a process it was not asked about: a process stays in its job for life.
func (o *Owners) jobsOf(ctx context.Context, pids []int) (map[int]string, error) {
	starts := map[int]uint64{}
	fresh := true
	for _, pid := range pids {
		st, err := processStart(o.proc(), pid)
		if err != nil {
			continue // gone: nobody's
		}
		starts[pid] = st
		if p, ok := o.procs[pid]; !ok || p.start != st {
			fresh = false
		}
	}
	if !fresh {
		byPID, err := o.listPids(ctx, "")
		if err != nil {
			clear(o.procs)
			return nil, err
		}
		clear(o.procs)
		for pid, st := range starts {
			o.procs[pid] = procJob{start: st, job: byPID[pid]}
		}
	}
	out := map[int]string{}
	for pid, st := range starts {
		if p := o.procs[pid]; p.start == st {
			out[pid] = p.job
		}
	}
	return out, nil
}

func (o *Owners) listPids(ctx context.Context, job string) (map[int]string, error) {
	out, err := o.Scontrol.Run(ctx, slurmcli.ListPidsArgs(job, o.Node)...)
	if err != nil {
		o.fail(err)
		return nil, err
	}
	o.recover()
	byPID, bad := slurmcli.ParseListPids(out)
	if bad > 0 {
		o.once(slog.LevelWarn, "listpids-bad", "scontrol listpids printed lines that are not PID JOBID ...; they are skipped", "lines", bad)
	}
	return byPID, nil
}

// record returns what Slurm says of job, asking when it is not known yet (or when its
// record could not be read and RetryAfter has passed).
func (o *Owners) record(ctx context.Context, job string, now time.Time) (jobRecord, error) {
	rec, ok := o.known[job]
	retry := o.RetryAfter
	if retry <= 0 {
		retry = time.Minute
	}
	if ok && (!rec.unknown || now.Sub(rec.askedAt) < retry) {
		return rec, nil
	}
	rec = jobRecord{unknown: true, askedAt: now, uid: -1}
	jobs, err := o.jobs.ShowOwn(ctx, job)
	j, found := jobs.ByID()[job]
	switch {
	case err == nil && found && j.Holds() && j.UID >= 0:
		rec = jobRecord{uid: j.UID, meta: j.Meta}
		for _, u := range j.Uses {
			switch {
			case u.Node != o.Node:
			case u.Whole:
				rec.gpus = append(rec.gpus, u.GPU)
			default:
				rec.shards += int(u.Shards)
			}
		}
		rec.nGPUs = len(rec.gpus)
		if rec.gpus == nil {
			rec.gpus = []int{} // Slurm said: none
		}
	case err == nil && found && j.State != "" && j.UID >= 0:
		// Slurm's own record says the job no longer holds its allocation (gpumemd
		// started after it ended): what it left is orphaned.
		rec = jobRecord{uid: j.UID, ended: true}
	case err == nil:
		// Slurm answered but its record cannot be read: squeue's fields can.
		sum, serr := o.jobs.Summary(ctx, job)
		switch {
		case serr != nil:
			err = fmt.Errorf("job %s: %v; %v", job, jobs.Bad, serr)
		case sum.State != "RUNNING" && sum.State != "COMPLETING" && sum.State != "SUSPENDED":
			err = fmt.Errorf("job %s: squeue says %s", job, sum.State)
		case sum.Shards == 0 && sum.GPUs == 0:
			// GPUs asked per job (--gpus) or none: squeue cannot say what it holds here.
			err = fmt.Errorf("job %s: %v; squeue shows no GPU per node", job, jobs.Bad)
		default:
			// squeue says how many GPUs per node, not which: rec.gpus stays nil.
			rec = jobRecord{uid: sum.UID, shards: int(sum.Shards), nGPUs: int(sum.GPUs)}
			o.once(slog.LevelInfo, "summary "+job, "job allocation read from squeue: its scontrol record cannot be trusted", "job", job, "shards", sum.Shards, "gpus", sum.GPUs, "bad", fmt.Sprint(jobs.Bad))
		}
	default:
		o.fail(err)
	}
	if rec.unknown {
		o.Unreadable++
		o.once(slog.LevelWarn, "unreadable "+job, "job allocation unknown: it is measured, and no policy acts on it", "job", job, "err", err)
	}
	o.known[job] = rec
	return rec, err
}

func (o *Owners) proc() string {
	if o.Proc == "" {
		return "/proc"
	}
	return o.Proc
}

func (o *Owners) fail(err error) {
	o.Failures++
	if msg := err.Error(); msg != o.lastErr {
		o.lastErr = msg
		o.log(slog.LevelError, "cannot ask Slurm who runs the GPU processes; they count as no job's until it answers", "err", err)
	}
}

func (o *Owners) recover() {
	if o.lastErr != "" {
		o.lastErr = ""
		o.log(slog.LevelInfo, "Slurm answers again")
	}
}

// once logs msg the first time key is seen and reports whether it did.
func (o *Owners) once(level slog.Level, key, msg string, args ...any) bool {
	if o.logged[key] {
		return false
	}
	if len(o.logged) > 4096 {
		clear(o.logged)
	}
	o.logged[key] = true
	o.log(level, msg, args...)
	return true
}

func (o *Owners) log(level slog.Level, msg string, args ...any) {
	if o.Log != nil {
		o.Log.Log(context.Background(), level, msg, args...)
	}
}

// Report logs, once each, what a poll's accounting found that no policy measures
// against a slice: processes left by ended jobs, processes of unknown size, and jobs
// holding memory on GPUs they were not given; and counts them.
func (o *Owners) Report(a Accounting) {
	if o.logged == nil {
		o.logged = map[string]bool{}
	}
	for _, p := range a.Orphans {
		if o.once(slog.LevelWarn, fmt.Sprintf("orphan %s %d", p.Job, p.PID), "GPU process of an ended job: counted as orphaned on its GPU, not as the job's; it is not killed",
			"job", p.Job, "pid", p.PID, "gpu", p.GPU, "bytes", p.Used, "unknown_size", p.Unknown) {
			o.Orphans++
		}
	}
	for _, g := range a.UnknownProcs {
		if o.once(slog.LevelWarn, fmt.Sprintf("unknown-size %d", g.PID), "NVML reports no memory size for a GPU process (not available, or more than the GPU has); it is counted as of unknown size and never acted on",
			"pid", g.PID, "gpu", g.GPU) {
			o.UnknownSizes++
		}
	}
	for _, j := range a.Jobs {
		if j.Stray > 0 && o.once(slog.LevelWarn, "stray "+j.ID, "job holds GPU memory on GPUs Slurm did not give it", "job", j.ID, "bytes", j.Stray, "gpus", fmt.Sprint(strayGPUs(&j))) {
			o.Strays++
		}
	}
}
