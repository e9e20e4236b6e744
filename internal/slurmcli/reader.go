package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
)

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
	for _, j := range js.Jobs {
		switch {
		case !j.Holds():
			kept = append(kept, j)
		case !running[j.ID]:
			js.Bad = append(js.Bad, fmt.Errorf("job %s: a running record squeue does not confirm; a line of another job's free text", j.ID))
		case byID[j.ID].ID == "":
			js.Bad = append(js.Bad, fmt.Errorf("job %s: two records; one is forged by another job's free text", j.ID))
		default:
			kept = append(kept, j)
		}
	}
	js.Jobs = kept
	return js, nil
}

// Text reports whether the reader has fallen back to scontrol's text form.
func (r *JobReader) Text() bool { return r.noJSON.Load() }

// running are the ids of the jobs that hold their allocation, from squeue.
func (r *JobReader) running(ctx context.Context) (map[string]bool, error) {
	out, err := r.Squeue.Run(ctx, "-h", "-t", "RUNNING,COMPLETING,SUSPENDED", "-o", "%i")
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, f := range strings.Fields(out) {
		ids[f] = true
	}
	return ids, nil
}

// SummaryFormat is the squeue -o of Summary: id, user id, state, GRES per node. Slurm
// validates each of these fields; none is a user's free text.
const SummaryFormat = "%i|%U|%T|%b"

// Summary is what squeue says of one job.
type Summary struct {
	ID    string
	UID   int
	State string
	// Shards is the job's shards on each of its nodes, from its GRES per node; 0 when
	// it asks none per node.
	Shards int64
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
	for _, g := range strings.Split(f[3], ",") {
		if m := perNodeShardRe.FindStringSubmatch(g); m != nil {
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return Summary{}, fmt.Errorf("squeue -j %s: shard count in %q", id, clip(g))
			}
			s.Shards += n
		}
	}
	return s, nil
}

// perNodeShardRe is a shard request per node: gres:shard:4, gres/shard:l4_g0:4.
var perNodeShardRe = regexp.MustCompile(`^(?:gres[:/])?shard(?::[^:,]+)?:(\d+)$`)

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
