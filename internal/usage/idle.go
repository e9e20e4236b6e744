package usage

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/slurmcli"
)

// Idle policies: what to do with a job that holds GPU memory and does not use it. The
// job is warned once it has been idle for After; requeue and cancel act Grace later if
// it is still idle.
const (
	IdleRecord  = "record"  // only measure: metrics and the log
	IdleWarn    = "warn"    // also tell the job through scontrol notify
	IdleRequeue = "requeue" // warn, then requeue it with the reason in its AdminComment
	IdleCancel  = "cancel"  // warn, then cancel it with the reason in its AdminComment
)

// IdleJob is a job Slurm gave GPU memory on this node that holds no GPU process on it
// (or whose GPUs are all below the utilisation threshold).
type IdleJob struct {
	ID     string
	Meta   slurmcli.Meta
	Alloc  uint64 // bytes Slurm allocated to it on this node
	GPUs   []int
	Since  time.Time
	Exempt string // why no policy acts on it ("" when one may)
}

// Reclaimer finds the jobs that hold GPU memory on this node and leave it idle, and
// applies the idle policy to them. Which jobs run here comes from `scontrol listpids`
// (slurmstepd's own list) and what each holds from its Slurm record; it acts only on a
// job whose record it read whole, none of whose processes could be hiding on its GPUs
// (no memory there belongs to a process of no job, and Slurm answered who runs the GPU
// processes), and whose record it reads again, still running here, at the moment of
// acting. Exempt: interactive jobs (unless Interactive), the QOS and accounts listed,
// and any job whose QOS, account or batch flag could not be read.
type Reclaimer struct {
	Node           string
	IdlePolicy     string // IdleRecord, IdleWarn, IdleRequeue or IdleCancel (gpumem.conf IdlePolicy)
	After, Grace   time.Duration
	UtilBelow      float64 // 0-1: a job with processes counts as idle when all its GPUs are busy less than this; 0: never
	Interval       time.Duration
	ExemptQOS      []string
	ExemptAccounts []string
	Interactive    bool // interactive jobs may be reclaimed too
	Unit           uint64
	// Scontrol lists the jobs, reads them, records the reason and requeues; Squeue
	// checks scontrol's text form; Scancel cancels.
	Scontrol, Squeue, Scancel slurmcli.Runner
	Tell                      func(job, msg string) // nil tells nothing
	Log                       *slog.Logger

	// Actions counts what was done: warn, requeue, cancel, failed.
	Actions map[string]uint64

	reader    slurmcli.JobReader
	listed    time.Time
	held      map[string]heldJob // jobs running here, from their Slurm record
	idleSince map[string]time.Time
	warned    map[string]bool
	acted     map[string]bool
}

type heldJob struct {
	meta    slurmcli.Meta
	gpus    map[int]uint64 // GPU index -> shards (0 for a whole GPU)
	whole   map[int]bool
	unknown bool // the record could not be read: never idle, never acted on
}

// Step looks at one poll: the snapshot, the jobs whose processes it attributed, the
// memory of processes of no job per GPU, and whether attribution failed this poll.
// It returns the jobs idle now.
func (r *Reclaimer) Step(ctx context.Context, s Snapshot, jobs []Job, unattributed map[int]uint64, ownersFailed bool, now time.Time) []IdleJob {
	if r.held == nil {
		r.held, r.idleSince, r.warned, r.acted = map[string]heldJob{}, map[string]time.Time{}, map[string]bool{}, map[string]bool{}
		r.reader = slurmcli.JobReader{Scontrol: r.Scontrol, Squeue: r.Squeue}
		if r.Actions == nil {
			r.Actions = map[string]uint64{}
		}
	}
	if now.Sub(r.listed) >= r.Interval {
		r.list(ctx, now)
	}
	busy := map[string]*Job{}
	for i := range jobs {
		busy[jobs[i].ID] = &jobs[i]
	}
	gpus := map[int]*GPU{}
	for i := range s.GPUs {
		gpus[s.GPUs[i].Index] = &s.GPUs[i]
	}
	var idle []IdleJob
	for _, id := range slices.Sorted(maps.Keys(r.held)) {
		h := r.held[id]
		if h.unknown || len(h.gpus) == 0 {
			continue
		}
		ij := IdleJob{ID: id, Meta: h.meta, GPUs: slices.Sorted(maps.Keys(h.gpus))}
		certain := !ownersFailed
		for _, g := range ij.GPUs {
			dev := gpus[g]
			if dev == nil || dev.Err != nil {
				certain = false
				continue
			}
			if h.whole[g] {
				ij.Alloc += dev.Total
			} else {
				ij.Alloc += h.gpus[g] * r.Unit
			}
			if unattributed[g] > 0 {
				certain = false // a process of no job there could be this job's
			}
		}
		if !certain || !r.idle(busy[id], ij.GPUs, gpus) {
			delete(r.idleSince, id)
			delete(r.warned, id)
			continue
		}
		since, ok := r.idleSince[id]
		if !ok {
			since, r.idleSince[id] = now, now
		}
		ij.Since = since
		ij.Exempt = r.exempt(h.meta)
		idle = append(idle, ij)
		if ij.Exempt == "" {
			r.apply(ctx, ij, now)
		}
	}
	for id := range r.idleSince {
		if _, ok := r.held[id]; !ok {
			delete(r.idleSince, id)
			delete(r.warned, id)
		}
	}
	return idle
}

// idle says whether a job with these processes (nil: none) leaves its GPUs idle.
func (r *Reclaimer) idle(j *Job, gpus []int, devs map[int]*GPU) bool {
	if j == nil || !j.Holds() {
		return true
	}
	if r.UtilBelow <= 0 {
		return false
	}
	for _, g := range gpus {
		u := devs[g].UtilPct
		if math.IsNaN(u) || u/100 >= r.UtilBelow {
			return false
		}
	}
	return true
}

// exempt says why no policy may act on a job with this record, or "".
func (r *Reclaimer) exempt(m slurmcli.Meta) string {
	switch {
	case m.Batch == slurmcli.BatchUnknown:
		return "batch flag unknown"
	case m.Batch == slurmcli.BatchInteractive && !r.Interactive:
		return "interactive"
	case len(r.ExemptQOS) > 0 && m.QOS == "":
		return "QOS unknown"
	case slices.Contains(r.ExemptQOS, m.QOS):
		return "QOS " + m.QOS
	case len(r.ExemptAccounts) > 0 && m.Account == "":
		return "account unknown"
	case slices.Contains(r.ExemptAccounts, m.Account):
		return "account " + m.Account
	}
	return ""
}

// list refreshes which jobs run here and reads the record of each new one.
func (r *Reclaimer) list(ctx context.Context, now time.Time) {
	out, err := r.Scontrol.Run(ctx, slurmcli.ListPidsArgs("", r.Node)...)
	if err != nil {
		r.log(slog.LevelWarn, "cannot list the jobs running here; idle jobs are not looked for until Slurm answers", "err", err)
		return // keep what was known; nothing is acted on without a fresh confirmation anyway
	}
	r.listed = now
	byPID, _ := slurmcli.ParseListPids(out)
	running := map[string]bool{}
	for _, job := range byPID {
		running[job] = true
	}
	for id := range r.held {
		if !running[id] {
			delete(r.held, id)
			delete(r.acted, id)
		}
	}
	for id := range running {
		if h, ok := r.held[id]; ok && !h.unknown {
			continue
		}
		r.held[id] = r.read(ctx, id)
	}
}

// read is what Slurm's record says job id holds on this node.
func (r *Reclaimer) read(ctx context.Context, id string) heldJob {
	js, err := r.reader.ShowOwn(ctx, id)
	j, ok := js.ByID()[id]
	if err != nil || !ok || !j.Holds() || j.UID < 0 {
		return heldJob{unknown: true}
	}
	h := heldJob{meta: j.Meta, gpus: map[int]uint64{}, whole: map[int]bool{}}
	for _, u := range j.Uses {
		if u.Node != r.Node {
			continue
		}
		h.gpus[u.GPU] += uint64(u.Shards)
		if u.Whole {
			h.whole[u.GPU] = true
		}
	}
	return h
}

// apply runs the policy on an idle job that no exemption covers.
func (r *Reclaimer) apply(ctx context.Context, j IdleJob, now time.Time) {
	idleFor := now.Sub(j.Since)
	if idleFor < r.After || r.acted[j.ID] {
		return
	}
	what := fmt.Sprintf("gpumem: job %s holds %s of GPU memory on %s (GPU %s) with no GPU process for %s",
		j.ID, gibOf(j.Alloc), r.Node, ints(j.GPUs), idleFor.Truncate(time.Second))
	if r.UtilBelow > 0 {
		what = fmt.Sprintf("gpumem: job %s holds %s of GPU memory on %s (GPU %s) and has used less than %.0f%% of it for %s",
			j.ID, gibOf(j.Alloc), r.Node, ints(j.GPUs), r.UtilBelow*100, idleFor.Truncate(time.Second))
	}
	if !r.warned[j.ID] {
		r.warned[j.ID] = true
		msg := what
		if r.IdlePolicy == IdleRequeue || r.IdlePolicy == IdleCancel {
			msg += fmt.Sprintf("; it will be %s in %s unless it starts using its GPU", done[r.IdlePolicy], r.Grace)
		}
		r.log(slog.LevelWarn, msg, "job", j.ID, "policy", r.IdlePolicy)
		if r.IdlePolicy == IdleRecord {
			return
		}
		if r.Tell != nil {
			r.Tell(j.ID, msg)
		}
		r.Actions["warn"]++
	}
	if (r.IdlePolicy != IdleRequeue && r.IdlePolicy != IdleCancel) || idleFor < r.After+r.Grace {
		return
	}
	r.acted[j.ID] = true
	// Slurm's record again, now: still this job, still running here.
	if h := r.read(ctx, j.ID); h.unknown || len(h.gpus) == 0 || r.exempt(h.meta) != "" {
		r.log(slog.LevelInfo, "idle job not acted on: its record no longer shows it holding GPU memory here", "job", j.ID)
		return
	}
	reason := what + "; " + done[r.IdlePolicy] + " by gpumemd's idle policy"
	if _, err := r.Scontrol.Run(ctx, "update", "JobId="+j.ID, "AdminComment="+reason); err != nil {
		r.Actions["failed"]++
		r.log(slog.LevelError, "cannot record the idle reason in the job; it is left running", "job", j.ID, "err", err)
		return
	}
	var err error
	if r.IdlePolicy == IdleRequeue {
		_, err = r.Scontrol.Run(ctx, "requeue", j.ID)
	} else {
		_, err = r.Scancel.Run(ctx, j.ID)
	}
	if err != nil {
		r.Actions["failed"]++
		r.log(slog.LevelError, "idle policy failed", "job", j.ID, "policy", r.IdlePolicy, "err", err)
		return
	}
	r.Actions[r.IdlePolicy]++
	r.log(slog.LevelWarn, reason, "job", j.ID)
}

func (r *Reclaimer) log(level slog.Level, msg string, args ...any) {
	if r.Log != nil {
		r.Log.Log(context.Background(), level, msg, args...)
	}
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

var done = map[string]string{IdleRequeue: "requeued", IdleCancel: "cancelled"}
