package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/steer"
)

// Allocations learns what Slurm allocated each job on one node, from
// `scontrol -d -o show job`. A process's environment (SLURM_SHARDS_ON_NODE) is set by
// slurmstepd but can be overridden by the job itself, so it is only a fallback for when
// Slurm cannot be asked, and each job measured that way is logged and counted.
//
// Slurm is asked at most once a poll, and only when a job appears that was not asked
// about before: a job's allocation is kept for as long as its processes are on the
// GPUs. After a failed query the environment is used for RetryAfter before Slurm is
// asked again, so a slurmctld that is down costs one Timeout per RetryAfter, not one
// per poll.
type Allocations struct {
	Node string // this node's Slurm NodeName
	// Query returns the output of `scontrol -d -o show job`; Scontrol(path) in
	// production, a stub in tests.
	Query      func(ctx context.Context) (string, error)
	Timeout    time.Duration // per query; 10s when zero
	RetryAfter time.Duration // after a failed query; one minute when zero
	Log        *slog.Logger  // nil logs nothing

	// EnvJobs counts the jobs whose allocation was taken from their environment since
	// start; Failures the queries that failed.
	EnvJobs, Failures uint64

	known    map[string]slurmAlloc // job id -> what Slurm said; only jobs seen on the GPUs
	envJobs  map[string]bool       // jobs measured by their environment, logged once each
	failedAt time.Time
	lastErr  string
}

// slurmAlloc is what Slurm said about one job on this node.
type slurmAlloc struct {
	ended  bool // not among Slurm's running jobs
	shards int  // its shards on this node
}

// Poll is what one poll learnt: which jobs Slurm no longer runs and whose allocation
// came from the environment, and the query's error when one failed.
type Poll struct {
	Ended   []string
	FromEnv []string
	Err     error
}

// Owners finds the owner of every GPU process of s with owner (Procfs.Owner), asks
// Slurm about jobs it has not seen, and returns the owners for Account: the shards are
// Slurm's when Slurm answered, the environment's otherwise. A job Slurm says has ended
// is nobody's: its processes count as unattributed and no policy acts on them.
func (a *Allocations) Owners(s Snapshot, owner OwnerFunc, now time.Time) (OwnerFunc, Poll) {
	type found struct {
		o   Owner
		err error
	}
	byPID := map[int]found{}
	seen := map[string]bool{}
	var unknown bool
	for _, g := range s.GPUs {
		for _, p := range g.Procs {
			if _, ok := byPID[p.PID]; ok {
				continue
			}
			o, err := owner(p.PID)
			byPID[p.PID] = found{o, err}
			if err == nil && o.JobID != "" && !seen[o.JobID] {
				seen[o.JobID] = true
				_, ok := a.known[o.JobID]
				unknown = unknown || !ok
			}
		}
	}
	if a.known == nil {
		a.known, a.envJobs = map[string]slurmAlloc{}, map[string]bool{}
	}
	for id := range a.known {
		if !seen[id] {
			delete(a.known, id)
		}
	}
	for id := range a.envJobs {
		if !seen[id] {
			delete(a.envJobs, id)
		}
	}
	var poll Poll
	if unknown && (a.failedAt.IsZero() || now.Sub(a.failedAt) >= orDefault(a.RetryAfter, time.Minute)) {
		poll.Err = a.ask(seen)
		if poll.Err != nil {
			a.failedAt = now
		} else {
			a.failedAt = time.Time{}
		}
	}
	result := map[int]found{}
	for pid, f := range byPID {
		if f.err == nil && f.o.JobID != "" {
			f.o, f.err = a.resolve(f.o, &poll)
		}
		result[pid] = f
	}
	slices.SortFunc(poll.FromEnv, cmpJob)
	slices.SortFunc(poll.Ended, cmpJob)
	return func(pid int) (Owner, error) {
		if f, ok := result[pid]; ok {
			return f.o, f.err
		}
		return owner(pid)
	}, poll
}

// resolve replaces the environment's shards with Slurm's, or notes the fallback.
func (a *Allocations) resolve(o Owner, poll *Poll) (Owner, error) {
	if k, ok := a.known[o.JobID]; ok {
		if k.ended {
			if !slices.Contains(poll.Ended, o.JobID) {
				poll.Ended = append(poll.Ended, o.JobID)
			}
			return Owner{}, fmt.Errorf("job %s: Slurm no longer runs it", o.JobID)
		}
		o.Shards = k.shards
		return o, nil
	}
	if !slices.Contains(poll.FromEnv, o.JobID) {
		poll.FromEnv = append(poll.FromEnv, o.JobID)
	}
	if !a.envJobs[o.JobID] {
		a.envJobs[o.JobID] = true
		a.EnvJobs++
		a.log(slog.LevelWarn, "job allocation taken from the job's environment, which the job controls: Slurm could not be asked",
			"job", o.JobID, "shards", o.Shards, "alloc_source", "environment", "env_alloc_jobs", a.EnvJobs, "last_err", a.lastErr)
	}
	return o, nil
}

// ask runs one query and records what it says about the seen jobs not known yet.
func (a *Allocations) ask(seen map[string]bool) error {
	err := a.query(seen)
	if err != nil {
		a.Failures++
		if msg := err.Error(); msg != a.lastErr {
			a.lastErr = msg
			a.log(slog.LevelError, "cannot ask Slurm for job allocations; using the jobs' environment until it answers", "err", err)
		}
		return err
	}
	if a.lastErr != "" {
		a.lastErr = ""
		a.log(slog.LevelInfo, "Slurm answers again: job allocations come from Slurm")
	}
	return nil
}

func (a *Allocations) query(seen map[string]bool) error {
	if a.Query == nil {
		return errors.New("no way to ask Slurm (Allocations.Query is nil)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), orDefault(a.Timeout, 10*time.Second))
	defer cancel()
	out, err := a.Query(ctx)
	if err != nil {
		return err
	}
	jobs, err := steer.JobUses(out)
	if err != nil {
		return fmt.Errorf("scontrol -d -o show job: %w", err)
	}
	for id := range seen {
		if _, ok := a.known[id]; ok {
			continue
		}
		uses, running := jobs[id]
		k := slurmAlloc{ended: !running}
		for _, u := range uses {
			if u.Node == a.Node && !u.Whole {
				k.shards += int(u.Shards)
			}
		}
		a.known[id] = k
	}
	return nil
}

func (a *Allocations) log(level slog.Level, msg string, args ...any) {
	if a.Log != nil {
		a.Log.Log(context.Background(), level, msg, args...)
	}
}

// Scontrol returns a Query that runs `PATH -d -o show job`. The caller's context
// bounds it, and WaitDelay makes sure a child that keeps the pipe open cannot hold
// the poll past it.
func Scontrol(path string) func(ctx context.Context) (string, error) {
	if path == "" {
		path = "scontrol"
	}
	return func(ctx context.Context) (string, error) {
		cmd := exec.CommandContext(ctx, path, "-d", "-o", "show", "job")
		cmd.WaitDelay = time.Second
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("%s -d -o show job: %v: %s", path, err, strings.TrimSpace(stderr.String()))
		}
		return string(out), nil
	}
}

func cmpJob(a, b string) int {
	if jobLess(a, b) {
		return -1
	}
	if jobLess(b, a) {
		return 1
	}
	return 0
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
