package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpumem/gpumem/internal/slurmgres"
	"github.com/gpumem/gpumem/internal/slurmjob"
)

// Pending jobs are read through squeue with a format of gpumem's choosing, whose fields
// (id, partitions, GRES request, required nodes, submit time) Slurm validates: no free
// text of the user's is printed, so no field can be forged.

// PendingFormat is the squeue -o format ParsePending reads (priority order, as squeue
// sorts pending jobs by default): id, partitions, TRES per node, required nodes, submit
// time. The first three alone are read too.
const PendingFormat = "%i|%P|%b|%n|%V"

// PendingQueue is what one `squeue -h -t PD -o PendingFormat` printed: every pending
// job, in priority order. Each reader below picks the jobs one use needs, and fails
// only on what that use reads, so one query serves them all.
type PendingQueue struct{ out string }

// ReadPending asks squeue for the pending jobs.
func ReadPending(ctx context.Context, squeue Runner) (PendingQueue, error) {
	out, err := squeue.Run(ctx, "-h", "-t", "PD", "-o", PendingFormat)
	return PendingQueue{out}, err
}

// Shards are the jobs that ask for shards (ParsePending).
func (q PendingQueue) Shards(loc *time.Location) ([]Pending, error) { return ParsePending(q.out, loc) }

// GRES are the jobs that ask for typed GPUs and no shards (ParsePendingGRES).
func (q PendingQueue) GRES(loc *time.Location) ([]PendingGRES, error) {
	return ParsePendingGRES(q.out, loc)
}

// GPUTypes are the jobs' typed gpu requests (ParsePendingGPUTypes).
func (q PendingQueue) GPUTypes() ([]PendingGPU, error) { return ParsePendingGPUTypes(q.out) }

// Pending is one pending job that asks for shards.
type Pending = slurmjob.Pending

// ParsePending reads `squeue -h -t PD -o PendingFormat` (or '%i|%P|%b'), with submit
// times in loc. Jobs that ask no shards are left out.
func ParsePending(out string, loc *time.Location) ([]Pending, error) {
	var jobs []Pending
	lines, err := pendingFields(out)
	if err != nil {
		return nil, err
	}
	for _, f := range lines {
		reqs := requests(strings.TrimSpace(f[2]), slurmgres.Shard, false)
		if len(reqs) == 0 {
			continue
		}
		m := reqs[0]
		if m.Count <= 0 {
			return nil, fmt.Errorf("squeue, job %s: shard count %q; want a positive integer", f[0], m.printed)
		}
		p := Pending{ID: strings.TrimSpace(f[0]), Partitions: strings.Split(strings.TrimSpace(f[1]), ","), Shards: m.Count, Type: m.Type}
		if len(f) == 5 {
			if p.ReqNodes = strings.TrimSpace(f[3]); p.ReqNodes == "(null)" {
				p.ReqNodes = ""
			}
		}
		if p.Submitted, err = submitted(f, loc); err != nil {
			return nil, err
		}
		jobs = append(jobs, p)
	}
	return jobs, nil
}

// submitted is a job's submit time from PendingFormat's fields; zero from the
// three-field form.
func submitted(f []string, loc *time.Location) (time.Time, error) {
	if len(f) != 5 {
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", strings.TrimSpace(f[4]), loc)
	if err != nil {
		return t, fmt.Errorf("squeue, job %s: submit time %q; want YYYY-MM-DDTHH:MM:SS", f[0], f[4])
	}
	return t, nil
}

// pendingFields splits squeue's PendingFormat output into each job's fields.
func pendingFields(out string) ([][]string, error) {
	var jobs [][]string
	for i, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 3 && len(f) != 5 {
			return nil, fmt.Errorf("squeue, line %d: %q; want JOBID|PARTITIONS|TRES_PER_NODE[|REQ_NODES|SUBMIT_TIME] from -o '%s'", i+1, clip(line), PendingFormat)
		}
		jobs = append(jobs, f)
	}
	return jobs, nil
}

// gresReq is one GRES a pending job asks for, with its count as squeue printed it.
type gresReq struct {
	slurmgres.Item
	printed string
}

// requests are the counted GRES called name (without a per-GPU detail) in a pending
// job's TRES per node as squeue's %b prints it (gres/shard:20, gres:gpu:3g.20gb:2), only
// the typed ones when typed. A count past int64 is kept as -1, for the caller to refuse.
func requests(tres, name string, typed bool) []gresReq {
	var out []gresReq
	for _, g := range slurmgres.Split(tres) {
		it, err := slurmgres.Parse(g)
		if errors.Is(err, strconv.ErrRange) {
			err = nil // it.Count is -1
		}
		if err != nil || it.Name != name || !it.Counted || it.Detail != "" || typed && it.Type == "" {
			continue
		}
		out = append(out, gresReq{it, g[strings.LastIndexByte(g, ':')+1:]})
	}
	return out
}
