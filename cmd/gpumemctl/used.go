package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpumem/gpumem/internal/cliflag"
	"github.com/gpumem/gpumem/internal/jobsummary"
	"github.com/gpumem/gpumem/internal/slurmcli"
	"github.com/gpumem/gpumem/internal/units"
	"github.com/gpumem/gpumem/internal/versioned"
)

func init() { subcommands = append(subcommands, newUsedCmd) }

type usedFlags struct {
	users, start string
	all          bool
	sacct        string
	timeout      time.Duration
	out          *output
}

// usedJobID is a job as sacct -j takes it: 123, an array's task 123_4, a hetjob's
// component 123+1.
var usedJobID = regexp.MustCompile(`^[0-9]{1,10}(_[0-9]{1,10}|\+[0-9]{1,5})?$`)

func newUsedCmd() *cobra.Command {
	var f usedFlags
	cmd := &cobra.Command{
		Use:   "used [JOBID...]",
		Short: "What a job used of its GPU memory: peak, mean, time over its slice, and the size that would have held it",
		Long: `At the end of each job, gpumemd on its nodes writes what the job used into the job's
AdminComment in Slurm's accounting; this reads it back with sacct, so it works for any
user (their own jobs, or what PrivateData lets them see), on any host with Slurm's
client commands, long after the job and the node forgot it. With JOBIDs, each job in
full: per node and GPU the slice it was given, its peak and mean, how long it was over
its slice and whether it was warned or killed, its GPU memory efficiency, the gpu:mem
size that would have held it, and its memory over time. Without, one line per job of
the caller's own (or --users') recent jobs that have a summary.`,
		Example: `  gpumemctl used 1234
  gpumemctl used --start now-30days
  gpumemctl used 1234_7 -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, id := range args {
				if !usedJobID.MatchString(id) {
					return usageError(fmt.Errorf("job id %q: want a Slurm job id such as 1234, 1234_7 (an array's task) or 1234+1 (a heterogeneous job's component)", id))
				}
			}
			return f.run(cmd, args)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.users, "users", "u", "", "without JOBID: these users' jobs (comma-separated, as sacct -u; default your own)")
	fs.StringVarP(&f.start, "start", "S", "now-7days", "without JOBID: jobs that ran since then (as sacct -S)")
	fs.BoolVar(&f.all, "all", false, "without JOBID: list jobs without a summary too")
	fs.StringVar(&f.sacct, "sacct", "sacct", "the sacct command")
	cliflag.DurationVar(fs, &f.timeout, "timeout", 60*time.Second, "give up on sacct after this long")
	f.out = addOutput(fs, formatTable, formatJSON, formatCSV)
	return cmd
}

// usedJob is one job in used's JSON.
type usedJob struct {
	ID        string               `json:"job_id"`
	State     string               `json:"state"`
	Elapsed   string               `json:"elapsed"`
	Summaries []jobsummary.Summary `json:"summaries"`
	FitMiB    int64                `json:"fit_mib,omitempty"` // the gpu:mem size per GPU that would have held it
	Errors    []string             `json:"errors,omitempty"`  // summaries that could not be read
}

func (f *usedFlags) run(cmd *cobra.Command, ids []string) error {
	args := []string{"-X", "-n", "-P", "--format=" + slurmcli.AcctFormat}
	if len(ids) > 0 {
		args = append(args, "-j", strings.Join(ids, ","))
	} else {
		args = append(args, "-S", f.start)
		if f.users != "" {
			args = append(args, "-u", f.users)
		}
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	out, err := slurmcli.Runner{Path: f.sacct, Timeout: f.timeout}.Run(ctx, args...)
	if err != nil {
		return err
	}
	var jobs []jobsummary.Job
	for _, a := range slurmcli.ParseAcctJobs(out) {
		if len(ids) > 0 && !asked(a, ids) {
			continue
		}
		j := jobsummary.Job{ID: a.ID, State: a.State, Elapsed: a.Elapsed}
		j.Sums, j.Errs = jobsummary.ParseComment(a.Comment)
		if len(ids) == 0 && !f.all && len(j.Sums) == 0 && len(j.Errs) == 0 {
			continue
		}
		jobs = append(jobs, j)
	}
	w := cmd.OutOrStdout()
	switch {
	case f.out.format == formatJSON:
		return writeJSON(w, usedJSON(jobs))
	case len(ids) > 0 && f.out.format == formatTable:
		if len(jobs) == 0 {
			return fmt.Errorf("sacct knows none of the jobs %s (ended more than its retention ago, another user's under PrivateData, or not yet started)", strings.Join(ids, ", "))
		}
		for i, j := range jobs {
			if i > 0 {
				fmt.Fprintln(w)
			}
			jobsummary.Write(w, j)
		}
		return nil
	}
	return usedRows(jobs).write(w, f.out.format)
}

// asked says whether sacct's record a is one of the jobs asked for: by its id or raw
// id, or a task or component of one (123 asks for 123_4 and 123+1).
func asked(a slurmcli.AcctJob, ids []string) bool {
	for _, id := range ids {
		if a.ID == id || a.RawID == id || strings.HasPrefix(a.ID, id+"_") || strings.HasPrefix(a.ID, id+"+") {
			return true
		}
	}
	return false
}

func usedJSON(jobs []jobsummary.Job) versioned.UsedDoc[usedJob] {
	var each []usedJob
	for _, j := range jobs {
		u := usedJob{ID: j.ID, State: j.State, Elapsed: j.Elapsed, Summaries: j.Sums}
		if u.Summaries == nil {
			u.Summaries = []jobsummary.Summary{}
		}
		u.FitMiB, _ = jobsummary.Fit(j.Sums)
		for _, e := range j.Errs {
			u.Errors = append(u.Errors, e.Error())
		}
		each = append(each, u)
	}
	return versioned.NewUsed(each)
}

// usedRows is one row per job and node: what the job was given there against its peak
// and mean, summed over its GPUs on the node.
func usedRows(jobs []jobsummary.Job) rows {
	r := rows{head: []string{"JOBID", "STATE", "ELAPSED", "NODE", "KIND", "GPUS", "GIVEN", "PEAK", "MEAN", "EFFICIENCY", "OVER", "WARNED", "KILLED", "WOULD FIT"}}
	for _, j := range jobs {
		fit := "-"
		if mib, ok := jobsummary.Fit(j.Sums); ok {
			fit = "gpu:mem:" + units.FormatSize(mib)
		}
		if len(j.Sums) == 0 {
			r.add(j.ID, j.State, j.Elapsed, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", fit)
		}
		for _, s := range j.Sums {
			var given, peak, mean int64
			for _, g := range s.GPUs {
				given, peak, mean = given+g.SliceMiB, peak+g.PeakMiB, mean+g.MeanMiB
			}
			eff := "-"
			if given > 0 {
				eff = strconv.FormatInt(peak*100/given, 10) + "%"
			}
			r.add(j.ID, j.State, j.Elapsed, s.Node, s.Kind, strconv.Itoa(len(s.GPUs)), units.GiB(given), units.GiB(peak), units.GiB(mean), eff,
				units.FormatDuration(time.Duration(s.OverSeconds)*time.Second), strconv.Itoa(s.Warnings), strconv.Itoa(s.Kills), fit)
		}
	}
	return r
}
