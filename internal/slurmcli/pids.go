package slurmcli

import (
	"fmt"
	"strconv"
	"strings"
)

// ListPidsArgs are the scontrol arguments that list the processes Slurm tracks for
// every job step on node ("*" for every job), or for one job.
func ListPidsArgs(job, node string) []string {
	if job == "" {
		job = "*"
	}
	return []string{"listpids", job, node}
}

// ParseListPids reads `scontrol listpids`: a header, then PID JOBID STEPID LOCALID
// GLOBALID a line. These are the processes slurmstepd tracks for each step (through
// the proctrack plugin), which a process outside the job cannot join. It returns the
// job of each PID; a line that cannot be read is skipped and counted in bad.
func ParseListPids(out string) (jobs map[int]string, bad int) {
	jobs = map[int]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == "PID" {
			continue
		}
		if len(f) < 2 {
			bad++
			continue
		}
		pid, err := strconv.Atoi(f[0])
		job := f[1]
		if _, jerr := strconv.ParseUint(job, 10, 32); err != nil || jerr != nil || pid <= 0 {
			bad++
			continue
		}
		jobs[pid] = job
	}
	return jobs, bad
}

// ShowJobArgs are the scontrol arguments for the detailed job list (one job when id
// is not empty), as JSON or, with text, as one line a job.
func ShowJobArgs(id string, text bool) []string {
	args := []string{"-d", "--json", "show", "job"}
	if text {
		args[1] = "-o"
	}
	if id != "" {
		args = append(args, id)
	}
	return args
}

// NotifyArgs are the scontrol arguments that send msg to a job's srun, salloc or batch
// script through Slurm, so nothing of the job is opened by the caller.
func NotifyArgs(job, msg string) []string { return []string{"notify", job, msg} }

// checkJobID is a Slurm job number.
func checkJobID(id string) error {
	if _, err := strconv.ParseUint(id, 10, 32); err != nil {
		return fmt.Errorf("job id %q: want a Slurm job number", clip(id))
	}
	return nil
}
