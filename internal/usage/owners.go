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
//     (JSON where scontrol has it), or squeue's id|uid|state|GRES when that record
//     cannot be trusted; asked once for each job that appears on the GPUs, and kept
//     while it is there;
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

	// Failures counts failed questions to Slurm; Unreadable the jobs whose record could
	// not be read (their allocation is unknown and no policy acts on them).
	Failures, Unreadable uint64

	jobs    slurmcli.JobReader
	known   map[string]jobRecord // job id -> what Slurm said; only jobs seen on the GPUs
	procs   map[int]procJob      // GPU process -> its job ("" for none), from the last listpids
	lastErr string
	logged  map[string]bool // one log line per job and problem
}

// jobRecord is what Slurm said about one job on this node.
type jobRecord struct {
	uid     int
	shards  int
	meta    slurmcli.Meta
	unknown bool      // the record could not be read
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
		if !rec.unknown {
			uid, err := processUID(o.proc(), pid)
			if err != nil || uid != rec.uid {
				o.once(slog.LevelWarn, fmt.Sprintf("uid %d %d", pid, uid), "a process Slurm lists in a job runs as another user; it is not counted as the job's",
					"job", job, "pid", pid, "process_uid", uid, "job_uid", rec.uid)
				continue
			}
		}
		result[pid] = Owner{JobID: job, Shards: rec.shards, Unknown: rec.unknown, Meta: rec.meta}
	}
	for id := range o.known {
		if !seen[id] {
			delete(o.known, id)
		}
	}
	return nobody, poll
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
	jobs, err := o.jobs.Show(ctx, job)
	if j, found := jobs.ByID()[job]; err == nil && found && j.Holds() && j.UID >= 0 {
		rec = jobRecord{uid: j.UID, meta: j.Meta}
		for _, u := range j.Uses {
			if u.Node == o.Node && !u.Whole {
				rec.shards += int(u.Shards)
			}
		}
	} else if err == nil {
		// Slurm answered but its record cannot be read: squeue's fields can.
		sum, serr := o.jobs.Summary(ctx, job)
		switch {
		case serr != nil:
			err = fmt.Errorf("job %s: %v; %v", job, jobs.Bad, serr)
		case sum.State != "RUNNING" && sum.State != "COMPLETING" && sum.State != "SUSPENDED":
			err = fmt.Errorf("job %s: squeue says %s", job, sum.State)
		default:
			rec = jobRecord{uid: sum.UID, shards: int(sum.Shards)}
			o.once(slog.LevelInfo, "summary "+job, "job allocation read from squeue: its scontrol record cannot be trusted", "job", job, "shards", sum.Shards, "bad", fmt.Sprint(jobs.Bad))
		}
	} else {
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

func (o *Owners) once(level slog.Level, key, msg string, args ...any) {
	if o.logged[key] {
		return
	}
	if len(o.logged) > 4096 {
		clear(o.logged)
	}
	o.logged[key] = true
	o.log(level, msg, args...)
}

func (o *Owners) log(level slog.Level, msg string, args ...any) {
	if o.Log != nil {
		o.Log.Log(context.Background(), level, msg, args...)
	}
}
