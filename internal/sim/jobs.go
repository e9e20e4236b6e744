package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/gpumem/gpumem/internal/trace"
)

// Job is a task replayed with departures: its request, when it was submitted and how
// long it runs once started (seconds, the trace's own times).
type Job struct {
	Pod              trace.Pod
	Submit, Duration int64
	// Limit is the run time backfill plans by, as Slurm plans by a job's time limit
	// and not by its run time, which it cannot know; 0: the run time itself.
	Limit int64
}

// planned is how long backfill expects j to run.
func (j *Job) planned() int64 {
	if j.Limit > 0 {
		return j.Limit
	}
	return j.Duration
}

// LoadJobs reads a task list with the trace's timing columns (creation_time,
// deletion_time, scheduled_time; the gpushare and default lists have them, the
// multigpu lists do not). A task runs for deletion minus scheduled time, or minus
// creation time where the trace never scheduled it (it was pending when deleted).
func LoadJobs(path string) ([]Job, error) {
	pods, err := trace.LoadPods(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readTimes(path, f, pods)
}

func readTimes(name string, r io.Reader, pods []trace.Pod) ([]Job, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, need := range []string{"name", "creation_time", "deletion_time", "scheduled_time"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s: no %s column; a replay with departures needs the trace's creation_time, deletion_time and scheduled_time (the default and gpushare task lists have them)", name, need)
		}
	}
	jobs := make([]Job, 0, len(pods))
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		i := len(jobs)
		if i >= len(pods) || rec[col["name"]] != pods[i].Name {
			return nil, fmt.Errorf("%s line %d: rows do not match the task list", name, line)
		}
		num := func(c string, empty int64) (int64, error) {
			v := rec[col[c]]
			if v == "" {
				return empty, nil
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("%s line %d: %s %q, want seconds from the trace's start (0 or more)", name, line, c, v)
			}
			return n, nil
		}
		created, err := num("creation_time", -1)
		if err == nil && created < 0 {
			err = fmt.Errorf("%s line %d: no creation_time", name, line)
		}
		if err != nil {
			return nil, err
		}
		deleted, err := num("deletion_time", created)
		if err != nil {
			return nil, err
		}
		started, err := num("scheduled_time", created)
		if err != nil {
			return nil, err
		}
		started = max(started, created)
		jobs = append(jobs, Job{Pod: pods[i], Submit: created, Duration: max(deleted-started, 0)})
	}
	if len(jobs) != len(pods) {
		return nil, fmt.Errorf("%s: %d timed rows for %d tasks", name, len(jobs), len(pods))
	}
	return jobs, nil
}

// Replicate is jobs n times over, each copy submitted with its original: a derived
// workload with n times the demand at every moment, so that the queue fills where the
// trace's own list (about one cluster's worth of GPU in all) barely does.
func Replicate(jobs []Job, n int) []Job {
	out := make([]Job, 0, len(jobs)*max(n, 1))
	for range max(n, 1) {
		out = append(out, jobs...)
	}
	return out
}
