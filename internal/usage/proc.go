package usage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// Owner is the Slurm job that runs a process and the shards it holds on this node.
type Owner struct {
	JobID  string // "" when the process belongs to no Slurm job
	Shards int    // 0 when the job holds no shards
}

// Procfs reads process ownership from a proc filesystem (normally /proc).
type Procfs struct {
	Root string
}

// slurm's cgroup layouts: v1 .../slurm/uid_U/job_J/step_S, v2
// .../slurmstepd.scope/job_J/step_S/...
var cgroupJob = regexp.MustCompile(`/job_([0-9]+)(/|$)`)

// Owner finds the job of a process. The cgroup comes first because slurmstepd sets it
// and a user cannot change it; the environment (SLURM_JOB_ID) is the fallback for
// nodes without Slurm's cgroup plugin. The shard count is the environment's
// SLURM_SHARDS_ON_NODE, which the job can set to anything: Allocations.Owners replaces
// it with what Slurm allocated and keeps it only when Slurm cannot be asked.
func (p Procfs) Owner(pid int) (Owner, error) {
	dir := filepath.Join(p.Root, strconv.Itoa(pid))
	var o Owner
	if cg, err := os.ReadFile(filepath.Join(dir, "cgroup")); err == nil {
		if m := cgroupJob.FindSubmatch(cg); m != nil {
			o.JobID = string(m[1])
		}
	} else if os.IsNotExist(err) {
		return Owner{}, fmt.Errorf("process %d: gone", pid)
	}
	env, err := os.ReadFile(filepath.Join(dir, "environ"))
	if err != nil {
		if o.JobID != "" {
			return o, nil
		}
		return Owner{}, fmt.Errorf("process %d: %w", pid, err)
	}
	if id := envValue(env, "SLURM_JOB_ID"); o.JobID == "" && id != "" {
		if _, err := strconv.ParseUint(id, 10, 64); err != nil {
			return Owner{}, fmt.Errorf("process %d: SLURM_JOB_ID=%q is not a job number", pid, id)
		}
		o.JobID = id
	}
	if s := envValue(env, "SLURM_SHARDS_ON_NODE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return Owner{}, fmt.Errorf("process %d: SLURM_SHARDS_ON_NODE=%q is not a shard count", pid, s)
		}
		o.Shards = n
	}
	return o, nil
}

// envValue finds KEY in a NUL-separated environment block.
func envValue(env []byte, key string) string {
	prefix := []byte(key + "=")
	for _, kv := range bytes.Split(env, []byte{0}) {
		if bytes.HasPrefix(kv, prefix) {
			return string(kv[len(prefix):])
		}
	}
	return ""
}
