package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gpumem/gpumem/internal/slurmconf"
	"github.com/gpumem/gpumem/internal/slurmgres"
	"github.com/gpumem/gpumem/internal/slurmjob"
)

// AnyGPU is the GPU of a Use whose index Slurm did not print.
const AnyGPU = slurmjob.AnyGPU

// JobReader reads jobs from Slurm. It asks scontrol for JSON and falls back to the
// one-line text form, for good, the first time this scontrol cannot print JSON (Debian's
// 22.05 has no --json). Text is checked against squeue, whose fields gpumem chooses and
// which prints no free text: a line forged by a job name holding a line break names a
// job that is not running, or one that then appears twice, and is dropped either way.
type JobReader struct {
	Scontrol, Squeue Runner
	noJSON           atomic.Bool
}

// Show reads every job (id "") or one job, with per-node GRES detail. The error is for
// a call or a document that failed as a whole; unreadable records are in Jobs.Bad.
func (r *JobReader) Show(ctx context.Context, id string) (Jobs, error) {
	if id != "" {
		if err := checkJobID(id); err != nil {
			return Jobs{}, err
		}
	}
	if !r.noJSON.Load() {
		out, err := r.Scontrol.Run(ctx, ShowJobArgs(id, false)...)
		if err == nil {
			return ParseJobsJSON([]byte(out))
		}
		if !noJSON(err) {
			return Jobs{}, err
		}
		r.noJSON.Store(true)
	}
	out, err := r.Scontrol.Run(ctx, ShowJobArgs(id, true)...)
	if err != nil {
		return Jobs{}, err
	}
	js := ParseJobsText(out)
	if id != "" {
		// One job asked, one line expected: anything else is a record a line break split.
		if len(js.Jobs) != 1 || len(js.Bad) != 0 || js.Jobs[0].ID != id {
			return Jobs{Bad: append(js.Bad, fmt.Errorf("job %s: scontrol printed %d records for one job; its free text holds a line break", id, len(js.Jobs)+len(js.Bad)))}, nil
		}
		return js, nil
	}
	running, err := r.running(ctx)
	if err != nil {
		return Jobs{}, err
	}
	byID := js.ByID()
	var kept []Job
	read := map[string]bool{}
	for _, j := range js.Jobs {
		_, holds := running[j.ID]
		switch {
		case !j.Holds():
			kept = append(kept, j)
		case !holds:
			js.Bad = append(js.Bad, fmt.Errorf("job %s: a running record squeue does not confirm; a line of another job's free text", j.ID))
		case byID[j.ID].ID == "":
			js.Bad = append(js.Bad, fmt.Errorf("job %s: two records; one is forged by another job's free text", j.ID))
		default:
			kept = append(kept, j)
			read[j.ID] = true
		}
	}
	js.Jobs = kept
	// A job that holds its allocation but whose record was refused keeps it all the
	// same: what it holds per node comes from squeue, which prints no free text.
	for _, q := range running {
		if read[q.ID] {
			continue
		}
		j, err := q.job()
		if err != nil {
			js.Bad = append(js.Bad, err)
			continue
		}
		js.Unread = append(js.Unread, j)
	}
	sort.Slice(js.Unread, func(a, b int) bool { return IDLess(js.Unread[a].ID, js.Unread[b].ID) })
	return js, nil
}

// Text reports whether the reader has fallen back to scontrol's text form.
func (r *JobReader) Text() bool { return r.noJSON.Load() }

// RunningFormat is the squeue -o of the jobs that hold their allocation: job id (%A,
// the number scontrol and listpids print, also for an array task), state, nodes, GRES
// per node. Slurm validates each of these fields; none is a user's free text.
const RunningFormat = "%A|%T|%N|%b"

// queued is one line of squeue -o RunningFormat.
type queued struct{ ID, State, Nodes, PerNode string }

// running are the jobs that hold their allocation, from squeue, by id.
func (r *JobReader) running(ctx context.Context) (map[string]queued, error) {
	return r.holding(ctx, "")
}

// Holding is the state of each job that holds its allocation on node (every node when
// ""), by job id: RUNNING, COMPLETING (it ended; Slurm is cleaning up) or SUSPENDED.
// A job not in it has ended or never ran.
func (r *JobReader) Holding(ctx context.Context, node string) (map[string]string, error) {
	q, err := r.holding(ctx, node)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(q))
	for id, j := range q {
		out[id] = j.State
	}
	return out, nil
}

func (r *JobReader) holding(ctx context.Context, node string) (map[string]queued, error) {
	args := []string{"-h", "-t", "RUNNING,COMPLETING,SUSPENDED", "-o", RunningFormat}
	if node != "" {
		args = append(args, "-w", node)
	}
	out, err := r.Squeue.Run(ctx, args...)
	if err != nil {
		return nil, err
	}
	return parseRunning(out), nil
}

// parseRunning reads squeue -h -o RunningFormat; a line of another shape is left out
// (it confirms no job, so no record is kept on its word).
func parseRunning(out string) map[string]queued {
	jobs := map[string]queued{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 4 || checkJobID(f[0]) != nil {
			continue
		}
		jobs[f[0]] = queued{ID: f[0], State: f[1], Nodes: f[2], PerNode: f[3]}
	}
	return jobs
}

// job is what squeue says a job holds: on each of its nodes, what it asked per node,
// on a GPU squeue does not name (slurmjob.AnyGPU).
func (q queued) job() (Job, error) {
	nodes, err := slurmconf.ExpandHostlistMax(q.Nodes, MaxJobNodes)
	if err != nil {
		return Job{}, fmt.Errorf("job %s: squeue's node list: %v", q.ID, err)
	}
	per, err := perNodeUses(q.PerNode)
	if err != nil {
		return Job{}, fmt.Errorf("job %s: squeue's GRES: %v", q.ID, err)
	}
	j := Job{ID: q.ID, State: q.State, UID: -1, Nodes: nodes}
	for _, n := range nodes {
		for _, u := range per {
			u.Node = n
			j.Uses = append(j.Uses, u)
		}
	}
	return j, nil
}

// SummaryFormat is the squeue -o of Summary: id (%A, as scontrol and listpids print
// it), user id, state, GRES per node. Slurm validates each of these fields; none is a
// user's free text.
const SummaryFormat = "%A|%U|%T|%b"

// Summary is what squeue says of one job.
type Summary struct {
	ID    string
	UID   int
	State string
	// Shards is the job's shards on each of its nodes, from its GRES per node; 0 when
	// it asks none per node.
	Shards int64
	// GPUs is the whole GPUs (or MIG instances) it holds on each of its nodes; squeue
	// does not say which.
	GPUs int64
}

// Summary asks squeue about one job. It is the reading of a job whose scontrol record
// cannot be trusted: shards per node are what the job asked per node, which is what
// Slurm gave it on each node.
func (r *JobReader) Summary(ctx context.Context, id string) (Summary, error) {
	if err := checkJobID(id); err != nil {
		return Summary{}, err
	}
	out, err := r.Squeue.Run(ctx, "-h", "-j", id, "-o", SummaryFormat)
	if err != nil {
		return Summary{}, err
	}
	return ParseSummary(out, id)
}

// ParseSummary reads squeue -h -o SummaryFormat for job id.
func ParseSummary(out, id string) (Summary, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		return Summary{}, fmt.Errorf("squeue -j %s: %d lines; want one", id, len(lines))
	}
	f := strings.Split(lines[0], "|")
	if len(f) != 4 || f[0] != id {
		return Summary{}, fmt.Errorf("squeue -j %s: %q; want %s", id, clip(lines[0]), SummaryFormat)
	}
	uid, err := strconv.Atoi(f[1])
	if err != nil {
		return Summary{}, fmt.Errorf("squeue -j %s: user id %q", id, clip(f[1]))
	}
	s := Summary{ID: id, UID: uid, State: f[2]}
	per, err := perNodeUses(f[3])
	if err != nil {
		return Summary{}, fmt.Errorf("squeue -j %s: %v", id, err)
	}
	for _, u := range per {
		if u.Whole {
			s.GPUs++
		} else {
			s.Shards += u.Shards
		}
	}
	return s, nil
}

// perNodeUses reads a job's GRES per node as squeue prints it (%b: gres:shard:4,
// gres/gpu:h100:2, gres/shard:l4_g0:4): shards, and one Use a whole GPU, each on
// slurmjob.AnyGPU with the type asked. Other GRES are not GPU memory and are skipped.
func perNodeUses(field string) ([]Use, error) {
	var out []Use
	for _, g := range strings.Split(field, ",") {
		it, err := slurmgres.Parse(g)
		switch {
		case errors.Is(err, strconv.ErrRange) && (it.Name == slurmgres.GPU || it.Name == slurmgres.Shard):
			return nil, fmt.Errorf("count in %q", clip(g))
		case err != nil || it.Name != slurmgres.GPU && it.Name != slurmgres.Shard || !it.Counted || it.Detail != "":
			continue
		case it.Name == slurmgres.Shard:
			out = append(out, Use{GPU: AnyGPU, Shards: it.Count, Type: it.Type})
			continue
		case it.Count > MaxNodeGPUs:
			return nil, fmt.Errorf("%q: more than %d GPUs", clip(g), MaxNodeGPUs)
		}
		for range it.Count {
			out = append(out, Use{GPU: AnyGPU, Whole: true, Type: it.Type})
		}
	}
	return out, nil
}

// noJSON recognises an scontrol that cannot print JSON, as opposed to one that could
// not reach slurmctld or took too long.
func noJSON(err error) bool {
	if errors.Is(err, ErrTooLarge) || strings.Contains(err.Error(), "no answer within") {
		return false
	}
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"unrecognized option", "invalid option", "data_parser", "openapi", "serializer"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
